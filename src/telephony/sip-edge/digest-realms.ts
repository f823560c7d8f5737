/**
 * The digest servers of the SIP edge, one per realm (a domain's FQDN),
 * shared by REGISTER (./register.ts) and INVITE
 * (../sip-carrier/inbound.ts): nonces are signed with one key on every
 * replica, and a nonce's counts are tracked once whichever method uses it.
 */
import type { Clock } from "../../clock.js";
import { DigestServer } from "../../sip/digest.js";

export class DigestRealms {
  private readonly servers = new Map<string, DigestServer>();

  constructor(
    private readonly options: {
      nonceKey: Buffer;
      clock: Clock;
      algorithms: Array<"SHA-256" | "MD5">;
    },
  ) {}

  for(realm: string): DigestServer {
    let server = this.servers.get(realm);
    if (server === undefined) {
      server = new DigestServer({
        realm,
        secret: this.options.nonceKey,
        clock: this.options.clock,
        algorithms: this.options.algorithms,
      });
      this.servers.set(realm, server);
    }
    return server;
  }
}
