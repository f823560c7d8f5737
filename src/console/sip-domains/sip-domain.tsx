/**
 * One SIP domain: what it is (address, type, termination, networks), the
 * operator's domain-optional switch, its users, its aliases (load
 * balancers), and — for the collaboration
 * direct-routing type — its verification with the platform.
 */
import { useQuery } from "@connectrpc/connect-query";
import {
  SipDomain_DomainType as DomainType,
  SipDomain_TerminationMode as Mode,
  type SipDomain,
  SipDomains,
} from "../../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { useSession } from "../app.js";
import { ErrorBanner } from "../kit/errors.js";
import { enumName, time } from "../kit/format.js";
import { Page } from "../kit/page.js";
import { href } from "../router.js";
import { AliasesSection } from "./aliases.js";
import { CollabVerificationSection } from "./collab-verification.js";
import { DomainOptionalCard } from "./domain-optional.js";
import { SipUsersSection } from "./sip-users.js";

export default function SipDomainPage({ id }: { id: string }) {
  const { session } = useSession();
  const domain = useQuery(SipDomains.method.getSipDomain, { name: `${session.project}/sipDomains/${id}` });
  return (
    <Page title={`SIP domain ${id}`}>
      <p>
        <a href={href("sip-domains")}>← All SIP domains</a>
      </p>
      <ErrorBanner error={domain.error} title="Could not get the domain" />
      {domain.isPending && <p role="status">Loading…</p>}
      {domain.data !== undefined && (
        <>
          <Summary domain={domain.data} />
          {session.operator &&
            domain.data.deleteTime === undefined &&
            domain.data.type !== DomainType.COLLAB_DIRECT_ROUTING && (
              <DomainOptionalCard key={String(domain.data.domainOptional)} domain={domain.data} />
            )}
          <SipUsersSection domain={domain.data} />
          <AliasesSection domain={domain.data} />
          {domain.data.type === DomainType.COLLAB_DIRECT_ROUTING && (
            <CollabVerificationSection domain={domain.data} />
          )}
        </>
      )}
    </Page>
  );
}

function Summary({ domain }: { domain: SipDomain }) {
  const collab = domain.type === DomainType.COLLAB_DIRECT_ROUTING;
  return (
    <dl className="summary">
      <dt>Address</dt>
      <dd>
        <code>{domain.fqdn}</code>
      </dd>
      <dt>Name</dt>
      <dd>{domain.displayName || "—"}</dd>
      <dt>Type</dt>
      <dd>{collab ? "Collaboration direct routing" : "Standard"}</dd>
      <dt>Call termination</dt>
      <dd>
        {enumName(Mode, domain.callTerminationMode)}
        {domain.callTerminationHandlerUris.length > 0 && ` → ${domain.callTerminationHandlerUris.join(", ")}`}
      </dd>
      <dt>CIDR blocks</dt>
      <dd>
        {domain.cidrBlocks.length === 0 ? "None" : domain.cidrBlocks.map((b) => b.cidrBlock).join(", ")}
        {domain.domainOptional && " (domain-optional: matched by network)"}
      </dd>
      <dt>REGISTER</dt>
      <dd>{domain.allowRegister ? "Allowed" : "Not allowed"}</dd>
      {collab && (
        <>
          <dt>Channel limit</dt>
          <dd>{domain.channelLimit || 1}</dd>
        </>
      )}
      <dt>Created</dt>
      <dd>{time(domain.createTime)}</dd>
      {domain.deleteTime !== undefined && (
        <>
          <dt>Deleted</dt>
          <dd>{time(domain.deleteTime)}</dd>
        </>
      )}
    </dl>
  );
}
