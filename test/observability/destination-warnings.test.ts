/**
 * Refused destinations said early: with private destinations refused, a
 * request setting a loopback/private/localhost webhook URI succeeds and
 * carries a `Warning: 299` header per such URI, on every transport.
 */
import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateSipDomainRequestSchema, SipDomains } from "../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import {
  destinationWarning,
  isRefusedDestination,
  refusedDestinations,
} from "../../src/observability/destination-warnings.js";
import { newApiKey, newProject } from "../support/app.js";
import { useAppDatabase } from "../transport/helpers.js";
import { type RpcTransportName, rpcClient, startObservedApp } from "./support.js";

const URIS = ["http://127.0.0.1:9/x", "https://hooks.example.com/ok", "http://localhost/y"];

describe("Destination warnings", () => {
  it("knows which URIs the guard will refuse", () => {
    expect(isRefusedDestination("http://127.0.0.1/x")).toBe(true);
    expect(isRefusedDestination("https://10.1.2.3:8443/x")).toBe(true);
    expect(isRefusedDestination("http://[::1]/x")).toBe(true);
    expect(isRefusedDestination("http://169.254.169.254/latest")).toBe(true);
    expect(isRefusedDestination("http://api.localhost/x")).toBe(true);
    expect(isRefusedDestination("https://hooks.example.com/x")).toBe(false);
    expect(isRefusedDestination("https://8.8.8.8/x")).toBe(false);
    expect(isRefusedDestination("sip:desk@10.0.0.1")).toBe(false);
    expect(isRefusedDestination("tel:+61491570156")).toBe(false);
    expect(isRefusedDestination("not a url")).toBe(false);
    const req = create(CreateSipDomainRequestSchema, {
      sipDomain: {
        callTerminationHandlerUris: URIS,
        callRecording: { recordingReadyUri: "http://192.168.1.5/r" },
      },
    });
    expect(refusedDestinations(CreateSipDomainRequestSchema, req)).toEqual([
      ["sip_domain.call_termination_handler_uris[0]", "http://127.0.0.1:9/x"],
      ["sip_domain.call_termination_handler_uris[2]", "http://localhost/y"],
      ["sip_domain.call_recording.recording_ready_uri", "http://192.168.1.5/r"],
    ]);
  });

  describe.each([
    { allow: "false", warned: true },
    { allow: "true", warned: false },
  ])("with WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS=$allow", ({ allow, warned }) => {
    const database = useAppDatabase();
    let app: Awaited<ReturnType<typeof startObservedApp>>;
    let project: string;
    let secret: string;
    beforeAll(async () => {
      app = await startObservedApp(database.db, { WEBHOOKS_ALLOW_PRIVATE_DESTINATIONS: allow });
      project = await newProject(database.db);
      secret = (await newApiKey(database.db, [{ project, roles: ["roles/owner"] }])).secret;
    });
    afterAll(async () => {
      await app?.close();
    });
    const expected = [
      destinationWarning("sip_domain.call_termination_handler_uris[0]", URIS[0]!),
      destinationWarning("sip_domain.call_termination_handler_uris[2]", URIS[2]!),
    ];
    const sipDomainId = () => `w${randomBytes(5).toString("hex")}`;
    const sipDomain = {
      callTerminationMode: 3, // PROGRAMMABLE
      callTerminationHandlerUris: URIS,
    };

    it.each<RpcTransportName>(["connect", "grpc", "grpc-web"])(
      "answers with a Warning per URI over %s",
      async (t) => {
        let warnings: string | null = null;
        const c = rpcClient(SipDomains, t, app.baseUrl, { authorization: `Bearer ${secret}` }, (h) => {
          warnings = h.get("warning");
        });
        try {
          const created = await c.client.createSipDomain({
            parent: project,
            sipDomainId: sipDomainId(),
            sipDomain,
          });
          expect(created.callTerminationHandlerUris).toEqual(URIS);
        } finally {
          c.close();
        }
        expect(warnings).toBe(warned ? expected.join(", ") : null);
      },
    );

    it("answers with a Warning per URI over REST", async () => {
      const res = await fetch(`${app.baseUrl}/v1beta1/${project}/sipDomains?sipDomainId=${sipDomainId()}`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify({ callTerminationMode: "PROGRAMMABLE", callTerminationHandlerUris: URIS }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("warning")).toBe(warned ? expected.join(", ") : null);
    });
  });
});
