/** The operator's number inventory: adding a block of numbers, and searching what is available. */
import { useInfiniteQuery, useMutation } from "@connectrpc/connect-query";
import { useState } from "react";
import {
  PhoneNumber_PhoneNumberCapability as Capability,
  PhoneNumber_PhoneNumberType as NumberType,
  PhoneNumbers,
} from "../../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import { NumberingAdmin } from "../../../gen/switchboard/admin/v1/numbering_pb.js";
import { EnumSelect, TextField } from "../kit/fields.js";
import { FormCard } from "../kit/form-card.js";
import { enumName } from "../kit/format.js";
import { ListTable, PAGED, pagedRows } from "../kit/list.js";
import { Page } from "../kit/page.js";
import { NUMBER_TYPES, PHONE_NUMBER_COLUMNS } from "../numbers/phone-numbers.js";

const CAPABILITIES = [Capability.VOICE, Capability.SMS, Capability.MMS];
const E164 = /^\+[1-9][0-9]{1,14}$/;

export default function InventoryPage() {
  const [start, setStart] = useState("");
  const [size, setSize] = useState("100");
  const [countryCode, setCountryCode] = useState("AU");
  const [numberType, setNumberType] = useState<NumberType>(NumberType.LOCAL);
  const [capabilities, setCapabilities] = useState<Capability[]>([Capability.VOICE]);
  const [search, setSearch] = useState({ countryCode: "AU", prefix: "" });
  const [prefix, setPrefix] = useState("");
  const add = useMutation(NumberingAdmin.method.createNumberBlock, { onSuccess: () => void list.refetch() });
  const list = useInfiniteQuery(
    PhoneNumbers.method.searchPhoneNumbers,
    { ...search, pageSize: 50, pageToken: "" },
    PAGED,
  );
  const startInvalid = start !== "" && !E164.test(start);
  const sizeNumber = Number(size);
  const sizeInvalid = !Number.isInteger(sizeNumber) || sizeNumber < 1 || sizeNumber > 100_000;
  const submit = () =>
    add.mutate({
      numberBlock: {
        startPhoneNumber: start,
        size: sizeNumber,
        countryCode: countryCode.trim().toUpperCase(),
        numberType,
        capabilities,
      },
    });
  const toggle = (c: Capability, on: boolean) =>
    setCapabilities((cs) => (on ? [...cs.filter((x) => x !== c), c] : cs.filter((x) => x !== c)));
  const rows = pagedRows(list, (p) => p.phoneNumbers);
  return (
    <Page title="Inventory">
      <FormCard
        label="Add a number block"
        onSubmit={submit}
        submit="Add block"
        disabled={add.isPending || start === "" || startInvalid || sizeInvalid || capabilities.length === 0}
        status={add.isSuccess && <p role="status">Added the block.</p>}
        error={add.error}
        errorTitle="Could not add the block"
      >
        <div className="row">
          <TextField
            label="First number (E.164)"
            id="block-start"
            invalid={startInvalid && "E.164, e.g. +61255501000."}
            required
            inputMode="tel"
            value={start}
            onChange={setStart}
          />
          <TextField
            label="How many"
            id="block-size"
            invalid={sizeInvalid && "1 to 100000."}
            inputMode="numeric"
            value={size}
            onChange={setSize}
          />
          <TextField
            label="Country"
            id="block-country"
            maxLength={2}
            value={countryCode}
            onChange={setCountryCode}
          />
          <EnumSelect
            label="Type"
            id="block-type"
            enumType={NumberType}
            options={NUMBER_TYPES}
            value={numberType}
            onChange={setNumberType}
          />
        </div>
        <fieldset className="row">
          <legend>Capabilities</legend>
          {CAPABILITIES.map((c) => (
            <div className="check" key={c}>
              <input
                id={`block-cap-${c}`}
                type="checkbox"
                checked={capabilities.includes(c)}
                onChange={(e) => toggle(c, e.target.checked)}
              />
              <label htmlFor={`block-cap-${c}`}>{enumName(Capability, c)}</label>
            </div>
          ))}
        </fieldset>
      </FormCard>
      <h2>Available numbers</h2>
      <form
        className="filters row"
        aria-label="Search the inventory"
        onSubmit={(e) => {
          e.preventDefault();
          setSearch({ countryCode: countryCode.trim().toUpperCase(), prefix: prefix.trim() });
        }}
      >
        <TextField label="Starts with" id="inventory-prefix" value={prefix} onChange={setPrefix} />
        <button type="submit">Search</button>
      </form>
      <ListTable
        list={list}
        errorTitle="Could not search the inventory"
        loading={null}
        caption="Available numbers"
        rows={rows}
        rowKey={(n) => n.name}
        empty="No number available here: add a block."
        columns={PHONE_NUMBER_COLUMNS}
      />
    </Page>
  );
}
