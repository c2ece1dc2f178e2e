/**
 * Where a webhook may be delivered: loopback, private, link-local, shared (CGNAT) and other
 * non-public addresses are refused unless the operator allows them, checked on every address a
 * name resolves to, and the connection is made to the address that was checked (the lookup below
 * is the connection's own), so a name cannot resolve to one address for the check and another for
 * the connection.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

const NON_PUBLIC_V4: [string, number][] = [
  ['0.0.0.0', 8], // "this network", 0.0.0.0 included
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // shared address space (carrier-grade NAT): inside someone's network
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata services among them
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast included
];
const NON_PUBLIC_V6: [string, number][] = [
  ['::', 96], // unspecified, loopback and the deprecated IPv4-compatible addresses
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
];

const nonPublic = new BlockList();
for (const [network, prefix] of NON_PUBLIC_V4) nonPublic.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of NON_PUBLIC_V6) nonPublic.addSubnet(network, prefix, 'ipv6');

/** The IPv4 address an IPv4-mapped (::ffff:0:0/96) or NAT64 (64:ff9b::/96) IPv6 address carries. */
function embeddedIpv4(ipv6: string): string | undefined {
  // The URL parser writes every IPv6 address one canonical way: `::ffff:127.0.0.1` → `::ffff:7f00:1`.
  const canonical = new URL(`http://[${ipv6}]/`).hostname.slice(1, -1);
  const match = /^(?:::ffff|64:ff9b:):([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (!match) return undefined;
  const high = parseInt(match[1]!, 16);
  const low = parseInt(match[2]!, 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/** Whether `address` (an IP literal) is loopback, private, link-local or otherwise not a public host. */
export function isNonPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return nonPublic.check(address, 'ipv4');
  if (family !== 6) return true;
  const ipv4 = embeddedIpv4(address);
  return ipv4 !== undefined ? nonPublic.check(ipv4, 'ipv4') : nonPublic.check(address, 'ipv6');
}

/** The URL's host as an IP literal, or undefined for a name. */
export function literalAddress(url: URL): string | undefined {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return isIP(host) ? host : undefined;
}

/** A delivery refused because of where it would go; its message is shown as the delivery's error. */
export class RefusedTarget extends Error {}

/**
 * The socket's lookup: resolves every address of the name and refuses the lot when any is not
 * public, so the address connected to is always one that passed.
 */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) return callback(error, '', 0);
    const refused = addresses.find((a) => isNonPublicAddress(a.address));
    if (refused || addresses.length === 0) {
      return callback(Object.assign(new RefusedTarget(`${hostname} resolves to a non-public address (${refused?.address ?? 'none'})`), { code: 'ENONPUBLIC' }), '', 0);
    }
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  });
};
