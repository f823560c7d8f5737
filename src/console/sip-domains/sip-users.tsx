/**
 * A SIP domain's users (switchboard.voice.v1.SipUsers): the list; adding
 * one, its password write-only (typed, sent, never shown again: the
 * service keeps only digest hashes); editing one's name or setting a new
 * password; disabling, enabling and deleting one. Writes are offered only
 * when the credential may make them and the domain is not deleted.
 */
import { useInfiniteQuery, useMutation } from "@connectrpc/connect-query";
import { type FormEvent, useId, useState } from "react";
import type { SipDomain } from "../../../gen/enfonica/voice/v1beta1/sip_domains_pb.js";
import { type SipUser, SipUsers } from "../../../gen/switchboard/voice/v1/sip_users_pb.js";
import { useCan } from "../kit/can.js";
import { ErrorBanner } from "../kit/errors.js";
import { TextField } from "../kit/fields.js";
import { FormCard } from "../kit/form-card.js";
import { time } from "../kit/format.js";
import { ListTable, PAGED, pagedRows } from "../kit/list.js";
import { useRefresh } from "../kit/refresh.js";
import { passwordProblem, userIdProblem, usernameProblem } from "./sip-user-rules.js";

export function SipUsersSection({ domain }: { domain: SipDomain }) {
  const deleted = domain.deleteTime !== undefined;
  const canCreate = useCan(SipUsers.method.createSipUser, { parent: domain.name });
  const canUpdate = useCan(SipUsers.method.updateSipUser, { sipUser: { name: `${domain.name}/users/` } });
  const canDelete = useCan(SipUsers.method.deleteSipUser, { name: `${domain.name}/users/` });
  const refresh = useRefresh(SipUsers);
  const [editing, setEditing] = useState<string | undefined>(undefined);
  const list = useInfiniteQuery(
    SipUsers.method.listSipUsers,
    { parent: domain.name, pageSize: 50, pageToken: "" },
    PAGED,
  );
  const update = useMutation(SipUsers.method.updateSipUser, { onSuccess: refresh });
  const rows = pagedRows(list, (p) => p.sipUsers);
  const edited = rows.find((u) => u.name === editing);
  const writable = !deleted && canUpdate === true;
  return (
    <section aria-labelledby="users-title">
      <h2 id="users-title">Users</h2>
      <p className="muted">
        Once a domain has users (disabled ones too), its calls must authenticate as one of them, from an
        address its CIDR blocks allow.
        {domain.allowRegister ? " Users may REGISTER." : " The domain does not allow REGISTER."}
      </p>
      {deleted && <p role="status">The domain is deleted: its users can be read, not changed.</p>}
      {!deleted && canCreate === true && <AddUser domain={domain} />}
      <ListTable
        list={list}
        errorTitle="Could not list the domain's users"
        notices={<ErrorBanner error={update.error} title="Could not change the user" />}
        caption="The domain's users"
        rows={rows}
        rowKey={(u) => u.name}
        empty={
          deleted || canCreate !== true
            ? "The domain has no users."
            : "The domain has no users yet: add one above."
        }
        columns={[
          { header: "User", cell: (u) => <code>{u.sipUserId}</code> },
          { header: "Address", cell: (u) => <code>{`sip:${u.username}@${domain.fqdn}`}</code> },
          { header: "Name", cell: (u) => u.displayName },
          { header: "State", cell: (u) => (u.disabled ? "Disabled" : "Enabled") },
          {
            header: "Password",
            cell: (u) =>
              u.realm === domain.fqdn ? "Set" : <strong>Set for realm {u.realm}: set it again</strong>,
          },
          { header: "Updated", cell: (u) => time(u.updateTime) },
          {
            header: "Actions",
            cell: (u) =>
              deleted ? null : (
                <span className="actions">
                  {writable && (
                    <>
                      <button
                        type="button"
                        onClick={() => setEditing(u.name)}
                        aria-label={`Edit ${u.sipUserId}`}
                      >
                        Edit
                      </button>
                      <button
                        type="button"
                        disabled={update.isPending}
                        aria-label={`${u.disabled ? "Enable" : "Disable"} ${u.sipUserId}`}
                        onClick={() =>
                          update.mutate({
                            sipUser: { name: u.name, disabled: !u.disabled },
                            updateMask: { paths: ["disabled"] },
                          })
                        }
                      >
                        {u.disabled ? "Enable" : "Disable"}
                      </button>
                    </>
                  )}
                  {canDelete === true && <DeleteUser user={u} />}
                </span>
              ),
          },
        ]}
      />
      {edited !== undefined && writable && (
        <EditUser key={edited.name} user={edited} onDone={() => setEditing(undefined)} />
      )}
    </section>
  );
}

function AddUser({ domain }: { domain: SipDomain }) {
  const id = useId();
  const refresh = useRefresh(SipUsers);
  const [userId, setUserId] = useState("");
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [displayName, setDisplayName] = useState("");
  const create = useMutation(SipUsers.method.createSipUser, {
    onSuccess: async () => {
      // The password leaves the page once sent.
      setUserId("");
      setUsername("");
      setPassword("");
      setDisplayName("");
      await refresh();
    },
  });
  const idBad = userId !== "" && userIdProblem(userId);
  const usernameBad = username !== "" && usernameProblem(username);
  const passwordBad = password !== "" && passwordProblem(password);
  return (
    <FormCard
      label="Add a user"
      onSubmit={() =>
        create.mutate({
          parent: domain.name,
          sipUserId: userId,
          sipUser: { username, password, displayName },
        })
      }
      submit="Add user"
      disabled={
        create.isPending ||
        userId === "" ||
        username === "" ||
        password === "" ||
        idBad !== false ||
        usernameBad !== false ||
        passwordBad !== false
      }
      status={
        create.isSuccess && (
          <p role="status">
            Added <code>{create.data.sipUserId}</code>; its password is not shown again.
          </p>
        )
      }
      error={create.error}
      errorTitle="Could not add the user"
    >
      <div className="row">
        <TextField
          label="User ID"
          id={`${id}-id`}
          invalid={idBad}
          hint="Lower-case letters, digits and dashes."
          required
          value={userId}
          onChange={setUserId}
        />
        <TextField
          label="Username"
          id={`${id}-username`}
          invalid={usernameBad}
          hint={`Its address: sip:${username || "username"}@${domain.fqdn}`}
          required
          autoComplete="off"
          value={username}
          onChange={setUsername}
        />
        <TextField
          label="Password"
          id={`${id}-password`}
          type="password"
          autoComplete="new-password"
          invalid={passwordBad}
          hint="Write-only: 8 to 128 characters, never shown again."
          required
          value={password}
          onChange={setPassword}
        />
        <TextField label="Display name" id={`${id}-name`} value={displayName} onChange={setDisplayName} />
      </div>
    </FormCard>
  );
}

function EditUser({ user, onDone }: { user: SipUser; onDone: () => void }) {
  const id = useId();
  const refresh = useRefresh(SipUsers);
  const [displayName, setDisplayName] = useState(user.displayName);
  const [password, setPassword] = useState("");
  const passwordBad = password !== "" && passwordProblem(password);
  const update = useMutation(SipUsers.method.updateSipUser, {
    onSuccess: async () => {
      await refresh();
      onDone();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const paths = ["display_name", ...(password === "" ? [] : ["password"])];
    update.mutate({ sipUser: { name: user.name, displayName, password }, updateMask: { paths } });
  };
  return (
    <form className="card" onSubmit={submit} aria-label={`Edit ${user.sipUserId}`}>
      <h3>Edit {user.sipUserId}</h3>
      <div className="row">
        <TextField label="Display name" id={`${id}-name`} value={displayName} onChange={setDisplayName} />
        <TextField
          label="New password"
          id={`${id}-password`}
          type="password"
          autoComplete="new-password"
          invalid={passwordBad}
          hint="Empty keeps the current one."
          value={password}
          onChange={setPassword}
        />
      </div>
      <div className="actions">
        <button type="submit" className="primary" disabled={update.isPending || passwordBad !== false}>
          Save
        </button>
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
      <ErrorBanner error={update.error} title="Could not save the user" />
    </form>
  );
}

function DeleteUser({ user }: { user: SipUser }) {
  const refresh = useRefresh(SipUsers);
  const [confirming, setConfirming] = useState(false);
  const remove = useMutation(SipUsers.method.deleteSipUser, { onSuccess: refresh });
  if (remove.error) return <ErrorBanner error={remove.error} title={`Could not delete ${user.sipUserId}`} />;
  return confirming ? (
    <button
      type="button"
      className="danger"
      disabled={remove.isPending}
      onClick={() => remove.mutate({ name: user.name })}
    >
      Confirm deleting {user.sipUserId}
    </button>
  ) : (
    <button type="button" onClick={() => setConfirming(true)} aria-label={`Delete ${user.sipUserId}`}>
      Delete
    </button>
  );
}
