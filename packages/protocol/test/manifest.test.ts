import { describe, expect, it } from 'vitest';
import { releaseManifest } from '../src/index.js';

describe('SVCM1 release manifest', () => {
  it('joins the fields with 0x1F and lists artifacts in byte order of filename (golden vector)', () => {
    const text = releaseManifest({
      org: 'acme',
      productKey: 'editor',
      version: '1.2.0-rc.1',
      channel: 'rc',
      publishedAt: 1_780_000_000,
      artifacts: [
        { filename: 'app.dmg', platform: 'darwin', arch: 'universal', size: 3, sha256: 'b'.repeat(64) },
        { filename: 'App Setup.exe', platform: 'windows', arch: 'x86_64', size: 12, sha256: 'a'.repeat(64) },
        { filename: 'Zed.AppImage', platform: 'linux', arch: 'x86_64', size: 7, sha256: 'c'.repeat(64) },
      ],
    });
    // Upper case sorts before lower case in byte order: "App Setup.exe" < "Zed.AppImage" < "app.dmg".
    expect(text).toBe(
      [
        'SVCM1\u001facme\u001feditor\u001f1.2.0-rc.1\u001frc\u001f1780000000\u001f3',
        `App Setup.exe\u001fwindows\u001fx86_64\u001f12\u001f${'a'.repeat(64)}`,
        `Zed.AppImage\u001flinux\u001fx86_64\u001f7\u001f${'c'.repeat(64)}`,
        `app.dmg\u001fdarwin\u001funiversal\u001f3\u001f${'b'.repeat(64)}`,
      ].join('\u001f'),
    );
  });

  it('writes n = 0 and nothing after it for no artifacts', () => {
    expect(releaseManifest({ org: 'o', productKey: 'p', version: '1.0.0', channel: 'stable', publishedAt: 0, artifacts: [] })).toBe(
      'SVCM1\u001fo\u001fp\u001f1.0.0\u001fstable\u001f0\u001f0',
    );
  });
});
