// Imports go downward only (docs/architecture.md "Layers"): a back-edge fails this test with the file and
// import, and so does a file outside the known layers (a new top-level folder of src/ has no rules yet).
import * as assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';

const root = resolve(__dirname, '../..');
const src = join(root, 'src');
type Layer = 'core' | 'node' | 'gateway' | 'extension' | 'webview';
const mayImport: Record<Layer, readonly Layer[]> = {
  core: [],
  node: ['core'],
  gateway: ['core', 'node'],
  extension: ['core', 'node'],
  webview: ['core'],
};
const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : /\.tsx?$/.test(name) ? [p] : [];
  });
}

function layerOf(file: string): Layer | undefined {
  const first = relative(src, file).split(sep)[0];
  return first in mayImport ? (first as Layer) : undefined;
}

interface Violation {
  file: string;
  spec: string;
  why: string;
}

export function violations(
  files: readonly string[],
  read: (f: string) => string = (f) => readFileSync(f, 'utf8'),
): Violation[] {
  const out: Violation[] = [];
  for (const file of files) {
    const layer = layerOf(file);
    if (!layer) {
      out.push({
        file: relative(root, file),
        spec: '',
        why: `not in a layer: put it under src/{${Object.keys(mayImport).join(',')}}/, or add its folder to the layer table here and in docs/architecture.md`,
      });
      continue;
    }
    for (const { fileName: spec } of ts.preProcessFile(read(file), true, true).importedFiles) {
      const rel = relative(root, file);
      if (spec === 'vscode' && layer !== 'extension')
        out.push({ file: rel, spec, why: `only src/extension may import vscode` });
      if ((layer === 'core' || layer === 'webview') && builtins.has(spec))
        out.push({ file: rel, spec, why: `${layer} runs anywhere: no Node built-ins` });
      if (!spec.startsWith('.')) continue;
      const target = resolve(dirname(file), spec);
      const targetLayer = layerOf(target);
      if (!target.startsWith(src + sep) || !targetLayer) {
        out.push({ file: rel, spec, why: 'imports from outside src/' });
        continue;
      }
      if (targetLayer === layer) continue;
      if (!mayImport[layer].includes(targetLayer))
        out.push({ file: rel, spec, why: `${layer} may not import ${targetLayer}` });
      else if (layer === 'webview' && !relative(join(src, 'core'), target).startsWith('protocol')) {
        out.push({ file: rel, spec, why: 'webview may import only core/protocol' });
      }
    }
  }
  return out;
}

describe('layering', () => {
  it('src/ has no import that goes against the layer order', () => {
    const found = violations(filesUnder(src));
    assert.deepEqual(found, [], found.map((v) => `${v.file}: '${v.spec}' — ${v.why}`).join('\n'));
  });

  it('catches back-edges (core→node, node→extension, webview→extension, vscode outside extension) and files outside the layers', () => {
    const fake: Record<string, string> = {
      [join(src, 'core/a.ts')]: "import { x } from '../node/git';\nimport { readFileSync } from 'node:fs';",
      [join(src, 'node/b.ts')]: "import type { y } from '../extension/extension';",
      [join(src, 'webview/c.ts')]:
        "import { z } from '../extension/panel/delegationPanel';\nimport { w } from '../core/batonProfile';",
      [join(src, 'gateway/d.ts')]: "import * as vscode from 'vscode';",
      [join(src, 'extension/e.ts')]:
        "import { ok } from '../core/protocol/panelProtocol';\nimport { alsoOk } from '../node/git';",
      [join(src, 'shared/f.ts')]: "import { x } from '../core/batonProfile';",
      [join(src, 'g.ts')]: '',
    };
    const found = violations(Object.keys(fake), (f) => fake[f]).map((v) => `${v.file}|${v.spec}`);
    assert.deepEqual(found.sort(), [
      'src/core/a.ts|../node/git',
      'src/core/a.ts|node:fs',
      'src/g.ts|',
      'src/gateway/d.ts|vscode',
      'src/node/b.ts|../extension/extension',
      'src/shared/f.ts|',
      'src/webview/c.ts|../core/batonProfile',
      'src/webview/c.ts|../extension/panel/delegationPanel',
    ]);
  });
});
