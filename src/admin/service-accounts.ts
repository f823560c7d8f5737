/**
 * Service accounts: identities for software, bound to projects like API
 * keys (src/admin/bindings.ts), that authenticate with RSA keys through the
 * OAuth 2.0 JWT-bearer flow (src/oauth/). Rules:
 * - the id is chosen by the operator (1 to 30 of a-z, 0-9, `-`), unique;
 * - at least one binding, on create and on every update of the bindings;
 * - a key's private half is returned once, inside the JSON key file, and
 *   never stored; at most MAX_KEYS_PER_ACCOUNT keys per account;
 * - disabling or deleting an account or a key stops its access tokens at
 *   once: authentication reads them from the database on every request.
 */
import { generateKeyPair, randomBytes } from "node:crypto";
import { promisify } from "node:util";
import { alreadyExists, badField, failedPrecondition, notFound } from "../api/errors.js";
import { type PageResult, readPage } from "../api/pagination.js";
import type { Clock } from "../clock.js";
import type { ServiceAccountKeyRow } from "../db/schema/service-accounts.js";
import { type Binding, type BindingInput, checkBindings } from "./bindings.js";
import type { ProjectsRepository } from "./projects-repository.js";
import type { ServiceAccountKeysRepository } from "./service-account-keys-repository.js";
import type { ServiceAccountsRepository, ServiceAccountWithBindings } from "./service-accounts-repository.js";

export const SERVICE_ACCOUNT_TYPE = "admin.switchboard/ServiceAccount";
export const SERVICE_ACCOUNT_KEY_TYPE = "admin.switchboard/ServiceAccountKey";

/** The domain of service account emails: `.invalid` never resolves (RFC 2606); they are identifiers. */
export const SERVICE_ACCOUNT_EMAIL_DOMAIN = "serviceaccounts.switchboard.invalid";

export const MAX_KEYS_PER_ACCOUNT = 10;

/** The account's identity in assertions and key files. */
export function serviceAccountEmail(accountId: string): string {
  return `${accountId}@${SERVICE_ACCOUNT_EMAIL_DOMAIN}`;
}

/** The account id of an email of ours; undefined for anything else. */
export function accountIdOfEmail(email: string): string | undefined {
  const suffix = `@${SERVICE_ACCOUNT_EMAIL_DOMAIN}`;
  if (!email.endsWith(suffix)) return undefined;
  const id = email.slice(0, -suffix.length);
  return /^[a-z]([a-z0-9-]{0,28}[a-z0-9])?$/.test(id) ? id : undefined;
}

/** The Google-style JSON key file the SDKs read (what CreateServiceAccountKey returns once). */
export interface KeyFile {
  type: "service_account";
  project_id: string;
  private_key_id: string;
  private_key: string;
  client_email: string;
  client_id: string;
  token_uri: string;
}

const generateRsa = promisify(generateKeyPair);

export class ServiceAccountsDomain {
  constructor(
    private readonly accounts: ServiceAccountsRepository,
    private readonly keys: ServiceAccountKeysRepository,
    private readonly projects: ProjectsRepository,
    private readonly clock: Clock,
    /** The token endpoint's public URL, written into key files as `token_uri`. */
    private readonly tokenUrl: () => string,
  ) {}

  private bindings(inputs: BindingInput[]): Promise<Binding[]> {
    if (inputs.length === 0) {
      return Promise.reject(badField("service_account.bindings", "at least one binding is required"));
    }
    return checkBindings(inputs, "service_account.bindings", this.projects);
  }

  async create(
    id: string,
    displayName: string,
    bindings: BindingInput[],
    disabled: boolean,
  ): Promise<ServiceAccountWithBindings> {
    const checked = await this.bindings(bindings);
    const now = this.clock.now();
    const account = await this.accounts.insert(
      { id, displayName, disabled, createTime: now, updateTime: now },
      checked,
    );
    if (!account) {
      throw alreadyExists(
        SERVICE_ACCOUNT_TYPE,
        `serviceAccounts/${id}`,
        `serviceAccounts/${id} already exists`,
      );
    }
    return account;
  }

  async get(id: string): Promise<ServiceAccountWithBindings> {
    const account = await this.accounts.get(id);
    if (!account) throw notFound(SERVICE_ACCOUNT_TYPE, `serviceAccounts/${id}`);
    return account;
  }

  list(pageSize: number, pageToken: string): Promise<PageResult<ServiceAccountWithBindings>> {
    return readPage({ pageSize, pageToken, query: { method: "ListServiceAccounts" } }, (after, limit) =>
      this.accounts.list(after, limit),
    );
  }

  async update(
    id: string,
    changes: { displayName?: string; disabled?: boolean; bindings?: BindingInput[] },
  ): Promise<ServiceAccountWithBindings> {
    const out: { displayName?: string; disabled?: boolean; bindings?: Binding[] } = {};
    if (changes.displayName !== undefined) out.displayName = changes.displayName;
    if (changes.disabled !== undefined) out.disabled = changes.disabled;
    if (changes.bindings !== undefined) out.bindings = await this.bindings(changes.bindings);
    const account = await this.accounts.update(id, out, this.clock.now());
    if (!account) throw notFound(SERVICE_ACCOUNT_TYPE, `serviceAccounts/${id}`);
    return account;
  }

  async delete(id: string): Promise<void> {
    if (!(await this.accounts.delete(id))) throw notFound(SERVICE_ACCOUNT_TYPE, `serviceAccounts/${id}`);
  }

  /** A new RSA 2048 key: the stored row, and the key file (the only copy of the private key). */
  async createKey(accountId: string): Promise<{ key: ServiceAccountKeyRow; keyFile: KeyFile }> {
    const account = await this.get(accountId);
    if ((await this.keys.count(accountId)) >= MAX_KEYS_PER_ACCOUNT) {
      throw failedPrecondition(
        "SERVICE_ACCOUNT_KEY_LIMIT",
        `serviceAccounts/${accountId} has ${MAX_KEYS_PER_ACCOUNT} keys already; delete one first`,
        { limit: String(MAX_KEYS_PER_ACCOUNT) },
      );
    }
    const { publicKey, privateKey } = await generateRsa("rsa", {
      modulusLength: 2048,
      publicKeyEncoding: { type: "spki", format: "pem" },
      privateKeyEncoding: { type: "pkcs8", format: "pem" },
    });
    const now = this.clock.now();
    const key = await this.keys.insert({
      id: randomBytes(20).toString("hex"),
      serviceAccountId: accountId,
      publicKey,
      disabled: false,
      createTime: now,
      updateTime: now,
    });
    return {
      key,
      keyFile: {
        type: "service_account",
        project_id: account.bindings[0]?.projectId ?? "",
        private_key_id: key.id,
        private_key: privateKey,
        client_email: serviceAccountEmail(accountId),
        client_id: accountId,
        token_uri: this.tokenUrl(),
      },
    };
  }

  async getKey(accountId: string, keyId: string): Promise<ServiceAccountKeyRow> {
    const key = await this.keys.get(accountId, keyId);
    if (!key) throw notFound(SERVICE_ACCOUNT_KEY_TYPE, `serviceAccounts/${accountId}/keys/${keyId}`);
    return key;
  }

  async listKeys(
    accountId: string,
    pageSize: number,
    pageToken: string,
  ): Promise<PageResult<ServiceAccountKeyRow>> {
    await this.get(accountId);
    return readPage(
      { pageSize, pageToken, query: { method: "ListServiceAccountKeys", parent: accountId } },
      (after, limit) => this.keys.list(accountId, after, limit),
    );
  }

  async setKeyDisabled(accountId: string, keyId: string, disabled: boolean): Promise<ServiceAccountKeyRow> {
    const key = await this.keys.setDisabled(accountId, keyId, disabled, this.clock.now());
    if (!key) throw notFound(SERVICE_ACCOUNT_KEY_TYPE, `serviceAccounts/${accountId}/keys/${keyId}`);
    return key;
  }

  async deleteKey(accountId: string, keyId: string): Promise<void> {
    if (!(await this.keys.delete(accountId, keyId))) {
      throw notFound(SERVICE_ACCOUNT_KEY_TYPE, `serviceAccounts/${accountId}/keys/${keyId}`);
    }
  }
}
