/**
 * Collaboration direct-routing verification of a SIP domain of that type
 * (docs/sip-domains.md): whether it is verified; the owner applies the
 * verification string the platform's tenant issued; the operator sees the
 * simulated platform's side (the published record, whether it passes the
 * platform's own check) and can accept the record.
 */
import { useMutation, useQuery } from "@connectrpc/connect-query";
import { useId, useState } from "react";
import { type SipDomain, SipDomains } from "../../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { SipDomainAdmin } from "../../../gen/switchboard/admin/v1/sip_domains_pb.js";
import { useSession } from "../app.js";
import { useCan } from "../kit/can.js";
import { ErrorBanner } from "../kit/errors.js";
import { TextField } from "../kit/fields.js";
import { FormCard } from "../kit/form-card.js";
import { time } from "../kit/format.js";
import { useRefresh } from "../kit/refresh.js";

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** What is wrong with a verification string (one DNS TXT character-string), or false. */
export function verificationStringProblem(text: string): string | false {
  if (new TextEncoder().encode(text).length > 255) return "At most 255 bytes of UTF-8.";
  if (CONTROL.test(text)) return "No control characters.";
  return false;
}

export function CollabVerificationSection({ domain }: { domain: SipDomain }) {
  const { session } = useSession();
  const verified = domain.collabDirectRoutingStatus?.verified === true;
  const deleted = domain.deleteTime !== undefined;
  const canVerify = useCan(SipDomains.method.verifyCollabDirectRouting, { sipDomain: domain.name });
  return (
    <section aria-labelledby="collab-title">
      <h2 id="collab-title">Collaboration verification</h2>
      <p>
        Status: <strong data-testid="collab-verified">{verified ? "Verified" : "Not verified"}</strong>
        {!verified && " — apply the verification string the platform's tenant issued."}
      </p>
      {!deleted && canVerify === true && <ApplyString domain={domain} />}
      {session.operator && <PlatformSide domain={domain} />}
    </section>
  );
}

function ApplyString({ domain }: { domain: SipDomain }) {
  const id = useId();
  const refresh = useRefresh(SipDomains);
  const refreshAdmin = useRefresh(SipDomainAdmin);
  const [text, setText] = useState("");
  const verify = useMutation(SipDomains.method.verifyCollabDirectRouting, {
    onSuccess: async () => {
      await Promise.all([refresh(), refreshAdmin()]);
    },
  });
  const problem = text !== "" && verificationStringProblem(text);
  return (
    <FormCard
      label="Apply a verification string"
      onSubmit={() => verify.mutate({ sipDomain: domain.name, verificationString: text })}
      submit="Apply"
      disabled={verify.isPending || text === "" || problem !== false}
      status={
        verify.isSuccess && (
          <p role="status">
            Applied.{" "}
            {verify.data.collabDirectRoutingStatus?.verified === true
              ? "The platform accepted it: the domain is verified."
              : "The platform has not accepted it yet."}
          </p>
        )
      }
      error={verify.error}
      errorTitle="Could not apply the string"
    >
      <TextField
        label="Verification string"
        id={`${id}-string`}
        invalid={problem}
        hint="As the platform issued it, e.g. MS=ms12345678."
        value={text}
        onChange={setText}
      />
    </FormCard>
  );
}

/** The operator's view: the simulated platform's record of the domain, and accepting it. */
function PlatformSide({ domain }: { domain: SipDomain }) {
  const refresh = useRefresh(SipDomains);
  const refreshAdmin = useRefresh(SipDomainAdmin);
  const state = useQuery(SipDomainAdmin.method.getCollabVerification, { name: domain.name });
  const accept = useMutation(SipDomainAdmin.method.acceptCollabVerification, {
    onSuccess: async () => {
      await Promise.all([refresh(), refreshAdmin()]);
    },
  });
  const v = state.data;
  return (
    <div className="card">
      <h3>The platform's side (operator)</h3>
      <ErrorBanner error={state.error} title="Could not get the verification state" />
      {v !== undefined && (
        <>
          <dl className="summary">
            <dt>Published record</dt>
            <dd>{v.verificationRecord === "" ? "None yet" : <code>{v.verificationRecord}</code>}</dd>
            <dt>Applied</dt>
            <dd>{time(v.recordTime)}</dd>
            <dt>Passes the platform's check</dt>
            <dd>{v.verificationRecord === "" ? "—" : v.platformCheckPassed ? "Yes" : "No"}</dd>
            <dt>Verified</dt>
            <dd>{v.verified ? `Yes, since ${time(v.verifyTime)}` : "No"}</dd>
          </dl>
          {!v.verified && v.verificationRecord !== "" && domain.deleteTime === undefined && (
            <button
              type="button"
              disabled={accept.isPending}
              onClick={() => accept.mutate({ name: domain.name })}
            >
              Accept the record
            </button>
          )}
        </>
      )}
      <ErrorBanner error={accept.error} title="Could not accept the record" />
    </div>
  );
}
