/**
 * The permission each method needs, declared once, and where in the request
 * the project(s) it acts on are named. The interface document's table is
 * the source; a test fails when a served method has no entry here.
 *
 * `projects` lists request field paths (proto names) holding a resource name
 * that starts with `projects/{id}`; the permission is needed on every one of
 * them (MovePhoneNumberInstance names both the source and the destination).
 * `permission: null` marks operator-only methods (the admin API), and
 * `public: true` methods that need no credential at all (health, reflection).
 */
export interface MethodPolicy {
  permission: string | null;
  projects: string[];
  public?: boolean;
}

const P = (permission: string, ...projects: string[]): MethodPolicy => ({ permission, projects });
const OPERATOR: MethodPolicy = { permission: null, projects: [] };
const PUBLIC: MethodPolicy = { permission: null, projects: [], public: true };

export const METHOD_POLICIES: Readonly<Record<string, MethodPolicy>> = {
  // numbering
  "enfonica.numbering.v1beta1.RegulatoryListings/CreateRegulatoryListing": P(
    "numbering.regulatoryListings.create",
    "parent",
  ),
  "enfonica.numbering.v1beta1.RegulatoryListings/GetRegulatoryListing": P(
    "numbering.regulatoryListings.get",
    "name",
  ),
  "enfonica.numbering.v1beta1.RegulatoryListings/ListRegulatoryListings": P(
    "numbering.regulatoryListings.list",
    "parent",
  ),
  "enfonica.numbering.v1beta1.RegulatoryListings/UpdateRegulatoryListing": P(
    "numbering.regulatoryListings.update",
    "regulatory_listing.name",
  ),
  "enfonica.numbering.v1beta1.RegulatoryListings/DeleteRegulatoryListing": P(
    "numbering.regulatoryListings.delete",
    "name",
  ),
  "enfonica.numbering.v1beta1.RegulatoryListings/SearchRegulatoryListings": P(
    "numbering.regulatoryListings.list",
    "parent",
  ),
  // Inventory search is not project-scoped: any valid credential may search.
  "enfonica.numbering.v1beta1.PhoneNumbers/SearchPhoneNumbers": P("numbering.phoneNumbers.search"),
  "enfonica.numbering.v1beta1.PhoneNumberInstances/CreatePhoneNumberInstance": P(
    "numbering.phoneNumberInstances.create",
    "parent",
  ),
  "enfonica.numbering.v1beta1.PhoneNumberInstances/GetPhoneNumberInstance": P(
    "numbering.phoneNumberInstances.get",
    "name",
  ),
  "enfonica.numbering.v1beta1.PhoneNumberInstances/ListPhoneNumberInstances": P(
    "numbering.phoneNumberInstances.list",
    "parent",
  ),
  "enfonica.numbering.v1beta1.PhoneNumberInstances/UpdatePhoneNumberInstance": P(
    "numbering.phoneNumberInstances.update",
    "name",
  ),
  "enfonica.numbering.v1beta1.PhoneNumberInstances/DeletePhoneNumberInstance": P(
    "numbering.phoneNumberInstances.delete",
    "name",
  ),
  "enfonica.numbering.v1beta1.PhoneNumberInstances/MovePhoneNumberInstance": P(
    "numbering.phoneNumberInstances.move",
    "name",
    "destination_parent",
  ),
  "enfonica.numbering.v1beta1.PhoneNumberInstances/SplitRange": P(
    "numbering.phoneNumberInstances.splitRange",
    "phone_number_instance",
  ),
  // voice
  "enfonica.voice.v1beta1.SipDomains/CreateSipDomain": P("voice.sipDomains.create", "parent"),
  "enfonica.voice.v1beta1.SipDomains/GetSipDomain": P("voice.sipDomains.get", "name"),
  "enfonica.voice.v1beta1.SipDomains/ListSipDomains": P("voice.sipDomains.list", "parent"),
  "enfonica.voice.v1beta1.SipDomains/UpdateSipDomain": P("voice.sipDomains.update", "sip_domain.name"),
  "enfonica.voice.v1beta1.SipDomains/DeleteSipDomain": P("voice.sipDomains.delete", "name"),
  "enfonica.voice.v1beta1.SipDomains/VerifyCollabDirectRouting": P("voice.sipDomains.update", "sip_domain"),
  // Aliases are part of their SIP domain (the interface document lists no
  // alias permissions): reading needs get, changing needs update.
  "enfonica.voice.v1beta1.Aliases/CreateAlias": P("voice.sipDomains.update", "parent"),
  "enfonica.voice.v1beta1.Aliases/GetAlias": P("voice.sipDomains.get", "name"),
  "enfonica.voice.v1beta1.Aliases/ListAliases": P("voice.sipDomains.get", "parent"),
  "enfonica.voice.v1beta1.Aliases/UpdateAlias": P("voice.sipDomains.update", "alias.name"),
  "enfonica.voice.v1beta1.Aliases/DeleteAlias": P("voice.sipDomains.update", "name"),
  // SIP users of a domain (switchboard extension, issue 27).
  "switchboard.voice.v1.SipUsers/CreateSipUser": P("voice.sipUsers.create", "parent"),
  "switchboard.voice.v1.SipUsers/GetSipUser": P("voice.sipUsers.get", "name"),
  "switchboard.voice.v1.SipUsers/ListSipUsers": P("voice.sipUsers.list", "parent"),
  "switchboard.voice.v1.SipUsers/UpdateSipUser": P("voice.sipUsers.update", "sip_user.name"),
  "switchboard.voice.v1.SipUsers/DeleteSipUser": P("voice.sipUsers.delete", "name"),
  "enfonica.voice.v1beta1.Calls/CreateCall": P("voice.calls.create", "parent"),
  "enfonica.voice.v1beta1.Calls/GetCall": P("voice.calls.get", "name"),
  "enfonica.voice.v1beta1.Calls/ListCalls": P("voice.calls.list", "parent"),
  "enfonica.voice.v1beta1.Recordings/GetRecording": P("voice.recordings.get", "name"),
  "enfonica.voice.v1beta1.Recordings/ListRecordings": P("voice.recordings.list", "parent"),
  "enfonica.voice.v1beta1.Recordings/DeleteRecording": P("voice.recordings.delete", "name"),
  "enfonica.voice.v1beta1.Transcriptions/GetTranscription": P("voice.transcriptions.get", "name"),
  "enfonica.voice.v1beta1.Transcriptions/ListTranscriptions": P("voice.transcriptions.list", "parent"),
  "enfonica.voice.v1beta1.Transcriptions/DeleteTranscription": P("voice.transcriptions.delete", "name"),
  // The SIP signalling of a call is part of reading the call.
  "enfonica.voice.v1beta1.SipInfoService/GetSipInfo": P("voice.calls.get", "name"),
  // The stream's project is named by its first message (setup.stream).
  "enfonica.voice.v1beta1.Streams/StreamCall": P("voice.streams.create", "setup.stream"),
  // messaging
  "enfonica.messaging.v1.Unsubscribers/CreateUnsubscriber": P("messaging.unsubscribers.create", "parent"),
  "enfonica.messaging.v1.Unsubscribers/GetUnsubscriber": P("messaging.unsubscribers.get", "name"),
  "enfonica.messaging.v1.Unsubscribers/ListUnsubscribers": P("messaging.unsubscribers.list", "parent"),
  "enfonica.messaging.v1.Unsubscribers/UpdateUnsubscriber": P(
    "messaging.unsubscribers.update",
    "unsubscriber.name",
  ),
  "enfonica.messaging.v1.Unsubscribers/DeleteUnsubscriber": P("messaging.unsubscribers.delete", "name"),
  "enfonica.messaging.v1.Messages/CreateMessage": P("messaging.messages.create", "parent"),
  "enfonica.messaging.v1.Messages/GetMessage": P("messaging.messages.get", "name"),
  "enfonica.messaging.v1.Messages/ListMessages": P("messaging.messages.list", "parent"),
  // admin API: the operator, except reading a project's signing key
  "switchboard.admin.v1.Projects/CreateProject": OPERATOR,
  "switchboard.admin.v1.Projects/GetProject": OPERATOR,
  "switchboard.admin.v1.Projects/ListProjects": OPERATOR,
  "switchboard.admin.v1.Projects/DeleteProject": OPERATOR,
  "switchboard.admin.v1.Projects/GetSigningKey": P("projects.signingKey.get", "name"),
  "switchboard.admin.v1.Projects/RotateSigningKey": OPERATOR,
  "switchboard.admin.v1.ApiKeys/CreateApiKey": OPERATOR,
  "switchboard.admin.v1.ApiKeys/GetApiKey": OPERATOR,
  "switchboard.admin.v1.ApiKeys/ListApiKeys": OPERATOR,
  "switchboard.admin.v1.ApiKeys/UpdateApiKey": OPERATOR,
  "switchboard.admin.v1.ApiKeys/DeleteApiKey": OPERATOR,
  "switchboard.admin.v1.ServiceAccounts/CreateServiceAccount": OPERATOR,
  "switchboard.admin.v1.ServiceAccounts/GetServiceAccount": OPERATOR,
  "switchboard.admin.v1.ServiceAccounts/ListServiceAccounts": OPERATOR,
  "switchboard.admin.v1.ServiceAccounts/UpdateServiceAccount": OPERATOR,
  "switchboard.admin.v1.ServiceAccounts/DeleteServiceAccount": OPERATOR,
  "switchboard.admin.v1.ServiceAccounts/CreateServiceAccountKey": OPERATOR,
  "switchboard.admin.v1.ServiceAccounts/GetServiceAccountKey": OPERATOR,
  "switchboard.admin.v1.ServiceAccounts/ListServiceAccountKeys": OPERATOR,
  "switchboard.admin.v1.ServiceAccounts/UpdateServiceAccountKey": OPERATOR,
  "switchboard.admin.v1.ServiceAccounts/DeleteServiceAccountKey": OPERATOR,
  "switchboard.admin.v1.SipDomainAdmin/SetDomainOptional": OPERATOR,
  "switchboard.admin.v1.SipDomainAdmin/GetCollabVerification": OPERATOR,
  "switchboard.admin.v1.SipDomainAdmin/AcceptCollabVerification": OPERATOR,
  "switchboard.admin.v1.SipTrunks/CreateSipTrunk": OPERATOR,
  "switchboard.admin.v1.SipTrunks/GetSipTrunk": OPERATOR,
  "switchboard.admin.v1.SipTrunks/ListSipTrunks": OPERATOR,
  "switchboard.admin.v1.SipTrunks/UpdateSipTrunk": OPERATOR,
  "switchboard.admin.v1.SipTrunks/DeleteSipTrunk": OPERATOR,
  "switchboard.admin.v1.NumberingAdmin/CreateNumberBlock": OPERATOR,
  "switchboard.admin.v1.NumberingAdmin/ProvisionPhoneNumberRange": OPERATOR,
  "switchboard.admin.v1.NumberingAdmin/PortInPhoneNumber": OPERATOR,
  "switchboard.admin.v1.NumberingAdmin/CompletePortIn": OPERATOR,
  "switchboard.admin.v1.NumberingAdmin/SuspendPhoneNumberInstance": OPERATOR,
  "switchboard.admin.v1.NumberingAdmin/ResumePhoneNumberInstance": OPERATOR,
  "switchboard.admin.v1.NumberingAdmin/ReviewRegulatoryListing": OPERATOR,
  "switchboard.admin.v1.SimulatorAdmin/CreateRoute": OPERATOR,
  "switchboard.admin.v1.SimulatorAdmin/GetRoute": OPERATOR,
  "switchboard.admin.v1.SimulatorAdmin/ListRoutes": OPERATOR,
  "switchboard.admin.v1.SimulatorAdmin/DeleteRoute": OPERATOR,
  "switchboard.admin.v1.SimulatorAdmin/InjectIncomingMessage": OPERATOR,
  "switchboard.admin.v1.SimulatorAdmin/InjectIncomingCall": OPERATOR,
  "switchboard.admin.v1.WebhookDeliveries/ListWebhookDeliveries": OPERATOR,
  // the project's webhook inspector (deliveries and call-control exchanges)
  "switchboard.webhooks.v1.WebhookDeliveries/ListWebhookDeliveries": P(
    "voice.webhookDeliveries.list",
    "parent",
  ),
  "switchboard.webhooks.v1.WebhookDeliveries/GetWebhookDelivery": P("voice.webhookDeliveries.get", "name"),
  "switchboard.webhooks.v1.WebhookDeliveries/RedeliverWebhookDelivery": P(
    "voice.webhookDeliveries.redeliver",
    "name",
  ),
  // standards every client may use without a credential
  "grpc.health.v1.Health/Check": PUBLIC,
  "grpc.health.v1.Health/List": PUBLIC,
  "grpc.health.v1.Health/Watch": PUBLIC,
  "grpc.reflection.v1.ServerReflection/ServerReflectionInfo": PUBLIC,
  "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo": PUBLIC,
};

/** Every permission a binding may grant. */
export const ALL_PERMISSIONS: readonly string[] = [
  ...new Set(
    Object.values(METHOD_POLICIES)
      .map((p) => p.permission)
      .filter((p): p is string => p !== null),
  ),
].sort();

function area(prefix: string, verbs?: string[]): string[] {
  return ALL_PERMISSIONS.filter(
    (p) => p.startsWith(prefix) && (verbs === undefined || verbs.includes(p.split(".").at(-1)!)),
  );
}

const READ_VERBS = ["get", "list", "search"];

/** Roles expand to permissions. */
export const ROLES: Readonly<Record<string, readonly string[]>> = {
  "roles/owner": ALL_PERMISSIONS,
  "roles/viewer": [
    ...area("numbering.", READ_VERBS),
    ...area("voice.", READ_VERBS),
    ...area("messaging.", READ_VERBS),
  ],
  "roles/numbering.admin": area("numbering."),
  "roles/voice.admin": area("voice."),
  "roles/messaging.admin": area("messaging."),
  "roles/webhooks.verifier": ["projects.signingKey.get"],
};

/** The permissions of a binding: its roles expanded, plus its permissions. */
export function expandBinding(roles: readonly string[], permissions: readonly string[]): Set<string> {
  const out = new Set(permissions);
  for (const r of roles) for (const p of ROLES[r] ?? []) out.add(p);
  return out;
}
