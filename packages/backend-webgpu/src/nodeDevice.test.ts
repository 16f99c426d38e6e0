import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NodeDeviceError, requestNodeDevice } from './nodeDevice.ts';

const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';

describe('requestNodeDevice (dawn.node)', () => {
  it('refuses the SwiftShader adapter with reason software-adapter, naming it', async () => {
    expect(existsSync(SWIFTSHADER_ICD), `${SWIFTSHADER_ICD} is missing: run 'npm run setup:system'`).toBe(true);
    // the Vulkan loader reads this when dawn.node creates its instance, below
    process.env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
    const err = await requestNodeDevice().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(NodeDeviceError);
    expect((err as NodeDeviceError).reason).toBe('software-adapter');
    expect((err as NodeDeviceError).message).toMatch(/software one \(google swiftshader.*crashes on SwiftShader/);
  });
});
