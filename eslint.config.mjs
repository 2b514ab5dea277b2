// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'out/**', 'node_modules/**', '.vscode-test/**', 'test-results/**', 'samples/**', '.demo/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'separate-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': ['error', { selector: 'ExportDefaultDeclaration', message: 'Use named exports.' }],
      eqeqeq: ['error', 'smart'],
    },
  },
  {
    // Notifications render [label](command:…) as a link: src/extension/notify.ts makes text inert.
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        ...['showInformationMessage', 'showWarningMessage', 'showErrorMessage'].map((property) => ({
          property,
          message:
            'Use showInfo/showWarning/showError from src/extension/notify.ts (agent text must not become a link).',
        })),
      ],
    },
  },
  {
    files: ['**/*.mjs', '**/*.cjs', '**/*.js'],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        require: 'readonly',
        module: 'writable',
        __dirname: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
      },
    },
  },
);
