import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { notificationText } from '../../src/core/notificationText';

/** VS Code's own pattern for a link in a notification (src/vs/base/common/linkedText.ts). */
const LINK = /\[([^\]]+)\]\(((?:https?:\/\/|command:|file:)[^)\s]+)(?: (["'])(.+?)(\3))?\)/gi;

describe('notificationText', () => {
  it('leaves no link VS Code would render, and keeps every word', () => {
    for (const text of [
      'Could not finish. [Open the fix](command:workbench.action.showCommands) to go on.',
      '[a](https://evil.example) and [b](file:///etc/passwd "title")',
      '[nested [x](command:y)](command:z)',
      '[spaced]   (command:x)',
    ]) {
      const out = notificationText(text);
      assert.equal(out.match(LINK), null, out);
      assert.deepEqual(out.replace(/\s+/g, ''), text.replace(/\s+/g, ''), 'only spaces change');
    }
    assert.equal(notificationText('Helper finished “Tidy [the] README”.'), 'Helper finished “Tidy [the] README”.');
  });
});
