// The network interface through which this node reaches MASTER_ADDR: the one that has that
// address (node 0), or the one whose IPv4 subnet holds it (the other nodes). `hcsp launch`
// restricts Open MPI's TCP traffic to it (launcher.ts), so that a job's MPI connections go
// where its rendezvous does and not over every interface of the machine.
import { lookup } from 'node:dns/promises';
import { networkInterfaces, type NetworkInterfaceInfo } from 'node:os';
import { isIPv4 } from 'node:net';

function ipv4Number(address: string): number {
  return address.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

function holds(info: NetworkInterfaceInfo, address: string): boolean {
  if (info.address === address) return true;
  if (info.family !== 'IPv4' || !isIPv4(address) || info.cidr === null) return false;
  const bits = Number(info.cidr.split('/')[1]);
  const size = 2 ** (32 - bits);
  return Math.floor(ipv4Number(info.address) / size) === Math.floor(ipv4Number(address) / size);
}

/**
 * The name of the interface that has MASTER_ADDR (any of the addresses its name resolves to)
 * or whose subnet holds it (an exact address first, then the narrowest subnet); null when
 * none does (a routed network, or a name that does not resolve here: nothing is restricted).
 */
export async function masterInterface(masterAddr: string, interfaces = networkInterfaces()): Promise<string | null> {
  let addresses: string[];
  try {
    addresses = (await lookup(masterAddr, { all: true })).map((a) => a.address);
  } catch {
    return null;
  }
  const all = Object.entries(interfaces).flatMap(([name, infos]) => (infos ?? []).map((info) => ({ name, info })));
  const exact = all.find(({ info }) => addresses.includes(info.address));
  if (exact) return exact.name;
  const containing = all.filter(({ info }) => addresses.some((a) => holds(info, a)));
  containing.sort((a, b) => Number(b.info.cidr!.split('/')[1]) - Number(a.info.cidr!.split('/')[1]));
  return containing[0]?.name ?? null;
}
