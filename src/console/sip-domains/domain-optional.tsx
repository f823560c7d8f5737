/**
 * The operator's domain-optional switch of a standard SIP domain
 * (SipDomainAdmin.SetDomainOptional): while on, calls that name no domain
 * are matched to it by source network, and its CIDR blocks are the
 * operator's. The blocks are checked as they are typed; overlapping another
 * domain-optional domain's is the API's refusal, shown.
 */
import { useMutation } from "@connectrpc/connect-query";
import { useId, useState } from "react";
import { type SipDomain, SipDomains } from "../../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { SipDomainAdmin } from "../../../gen/switchboard/admin/v1/sip_domains_pb.js";
import { TextAreaField } from "../kit/fields.js";
import { FormCard } from "../kit/form-card.js";
import { useRefresh } from "../kit/refresh.js";
import { parseCidrLines } from "./cidr.js";

export function DomainOptionalCard({ domain }: { domain: SipDomain }) {
  const id = useId();
  const refresh = useRefresh(SipDomains);
  const [cidrs, setCidrs] = useState(domain.cidrBlocks.map((b) => b.cidrBlock).join("\n"));
  const parsed = parseCidrLines(cidrs);
  const on = domain.domainOptional;
  const set = useMutation(SipDomainAdmin.method.setDomainOptional, { onSuccess: refresh });
  const hint =
    parsed.problems.length === 0 ? (
      on ? (
        "Turning it off keeps these blocks."
      ) : (
        "At least one block; none may overlap another domain-optional domain's."
      )
    ) : (
      <span role="alert">{parsed.problems.join("; ")}</span>
    );
  return (
    <FormCard
      label="Domain-optional mode"
      heading="Domain-optional mode (operator)"
      onSubmit={() =>
        set.mutate({
          name: domain.name,
          domainOptional: !on,
          cidrBlocks: parsed.blocks.map((cidrBlock) => ({ cidrBlock })),
        })
      }
      submit={on ? "Turn off" : "Turn on"}
      disabled={set.isPending || parsed.problems.length > 0}
      error={set.error}
      errorTitle="Could not change domain-optional mode"
    >
      <p>
        It is <strong data-testid="domain-optional">{on ? "on" : "off"}</strong>: while on, calls to the
        service's SIP addresses that name no domain are matched to this one by source network, and its CIDR
        blocks can be changed only here.
      </p>
      <TextAreaField
        label="CIDR blocks (one per line)"
        id={`${id}-cidrs`}
        hint={hint}
        rows={3}
        value={cidrs}
        aria-invalid={parsed.problems.length > 0}
        aria-describedby={`${id}-cidrs-hint`}
        onChange={setCidrs}
      />
    </FormCard>
  );
}
