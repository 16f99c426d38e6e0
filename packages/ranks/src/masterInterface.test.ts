// MASTER_ADDR's interface: the one that has the address (node 0), else the narrowest IPv4
// subnet that holds it (the other nodes); none for an address no interface reaches directly.
import type { NetworkInterfaceInfo } from 'node:os';
import { describe, expect, it } from 'vitest';
import { masterInterface } from './masterInterface.ts';

const v4 = (address: string, cidr: string): NetworkInterfaceInfo => ({ address, cidr, family: 'IPv4', netmask: '', mac: '', internal: false });
const interfaces = {
  lo: [v4('127.0.0.1', '127.0.0.1/8')],
  eth0: [v4('10.1.2.3', '10.1.2.3/16')],
  ib0: [v4('10.1.7.9', '10.1.7.9/24')],
};

describe('masterInterface', () => {
  it('names the interface that has the address, or the narrowest subnet that holds it', async () => {
    expect(await masterInterface('127.0.0.1', interfaces)).toBe('lo');
    expect(await masterInterface('10.1.2.3', interfaces)).toBe('eth0');
    expect(await masterInterface('10.1.9.9', interfaces)).toBe('eth0');
    expect(await masterInterface('10.1.7.1', interfaces)).toBe('ib0');
    expect(await masterInterface('localhost', interfaces)).toBe('lo');
  });

  it('is null for an address no interface holds, or a name that does not resolve', async () => {
    expect(await masterInterface('192.0.2.77', interfaces)).toBeNull();
    expect(await masterInterface('no-such-host.invalid', interfaces)).toBeNull();
  });
});
