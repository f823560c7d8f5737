/**
 * The operator registers the port-in of a number from another carrier to
 * the project (NumberingAdmin.PortInPhoneNumber): a PENDING instance until
 * the operator completes it from the list.
 */
import { useMutation } from "@connectrpc/connect-query";
import { useState } from "react";
import { PhoneNumberInstances } from "../../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import { NumberingAdmin } from "../../../gen/switchboard/admin/v1/numbering_pb.js";
import { useSession } from "../app.js";
import { TextField } from "../kit/fields.js";
import { FormCard } from "../kit/form-card.js";
import { useRefresh } from "../kit/refresh.js";

const E164 = /^\+[1-9][0-9]{1,14}$/;

export function PortIn() {
  const { session } = useSession();
  const refresh = useRefresh(PhoneNumberInstances);
  const [number, setNumber] = useState("");
  const portIn = useMutation(NumberingAdmin.method.portInPhoneNumber, { onSuccess: refresh });
  const bad = number !== "" && !E164.test(number.trim());
  return (
    <FormCard
      label="Register a port-in"
      heading="Register a port-in (operator)"
      onSubmit={() => portIn.mutate({ parent: session.project, phoneNumber: number.trim() })}
      submit="Register port-in"
      disabled={portIn.isPending || number === "" || bad}
      status={
        portIn.isSuccess && (
          <p role="status">
            <code>{portIn.data.phoneNumber?.phoneNumber}</code> is PENDING until its port-in is completed.
          </p>
        )
      }
      error={portIn.error}
      errorTitle="Could not register the port-in"
    >
      <TextField
        label="Number ported from another carrier (E.164)"
        id="port-in-number"
        invalid={bad && "E.164, e.g. +61255509999."}
        hint="A valid number that is not in this service's inventory."
        inputMode="tel"
        value={number}
        onChange={setNumber}
      />
    </FormCard>
  );
}
