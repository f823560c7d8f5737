/**
 * A project's number ranges: the ranges it holds (instances.tsx, ranges
 * only: edit, split, move, release) and, for the operator, provisioning a
 * range of inventory numbers to the project (NumberingAdmin; a project
 * credential cannot, so it is not offered).
 */
import { useMutation } from "@connectrpc/connect-query";
import { useState } from "react";
import { PhoneNumberInstances } from "../../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import { NumberingAdmin } from "../../../gen/switchboard/admin/v1/numbering_pb.js";
import { useSession } from "../app.js";
import { TextField } from "../kit/fields.js";
import { FormCard } from "../kit/form-card.js";
import { Page } from "../kit/page.js";
import { useRefresh } from "../kit/refresh.js";
import { numberText } from "./instance-actions.js";
import { Instances } from "./instances.js";

const E164 = /^\+[1-9][0-9]{1,14}$/;

export default function RangesPage() {
  const { session } = useSession();
  return (
    <Page title="Number ranges">
      <p className="muted">
        A range is a block of contiguous numbers held as one instance: calls and messages to any of its
        numbers belong to it, and its configuration is the range's.
      </p>
      {session.operator && <ProvisionRange />}
      <Instances
        ranges
        title="The project's ranges"
        empty={
          session.operator
            ? "The project holds no ranges: provision one above."
            : "The project holds no ranges: the operator provisions them."
        }
      />
    </Page>
  );
}

function ProvisionRange() {
  const { session } = useSession();
  const refresh = useRefresh(PhoneNumberInstances);
  const [start, setStart] = useState("");
  const [size, setSize] = useState("10");
  const provision = useMutation(NumberingAdmin.method.provisionPhoneNumberRange, { onSuccess: refresh });
  const startBad = start !== "" && !E164.test(start);
  const n = Number(size);
  const sizeBad = !Number.isInteger(n) || n < 1 || n > 10_000;
  return (
    <FormCard
      label="Provision a range"
      onSubmit={() => provision.mutate({ parent: session.project, startPhoneNumber: start, size: n })}
      submit="Provision range"
      disabled={provision.isPending || start === "" || startBad || sizeBad}
      status={
        provision.isSuccess && (
          <p role="status">
            Provisioned <code>{numberText(provision.data)}</code>.
          </p>
        )
      }
      error={provision.error}
      errorTitle="Could not provision the range"
    >
      <p className="muted">Every number must be in the inventory, free, and of one country and type.</p>
      <div className="row">
        <TextField
          label="First number (E.164)"
          id="range-start"
          invalid={startBad && "E.164, e.g. +61255501000."}
          required
          inputMode="tel"
          value={start}
          onChange={setStart}
        />
        <TextField
          label="How many numbers"
          id="range-size"
          invalid={sizeBad && "1 to 10000."}
          inputMode="numeric"
          value={size}
          onChange={setSize}
        />
      </div>
    </FormCard>
  );
}
