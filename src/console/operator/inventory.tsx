/** The operator's number inventory: adding a block of numbers, and searching what is available. */
import { useInfiniteQuery, useMutation } from "@connectrpc/connect-query";
import { type FormEvent, useState } from "react";
import {
  PhoneNumber_PhoneNumberCapability as Capability,
  PhoneNumber_PhoneNumberType as NumberType,
  PhoneNumbers,
} from "../../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import { NumberingAdmin } from "../../../gen/switchboard/admin/v1/numbering_pb.js";
import { ErrorBanner } from "../kit/errors.js";
import { enumName } from "../kit/format.js";
import { Field, Page } from "../kit/page.js";
import { Table } from "../kit/table.js";

const TYPES = [
  NumberType.LOCAL,
  NumberType.NATIONAL,
  NumberType.MOBILE,
  NumberType.TOLL_FREE,
  NumberType.SHARED_RATE,
];
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
    { pageParamKey: "pageToken", getNextPageParam: (l) => l.nextPageToken || undefined },
  );
  const startInvalid = start !== "" && !E164.test(start);
  const sizeNumber = Number(size);
  const sizeInvalid = !Number.isInteger(sizeNumber) || sizeNumber < 1 || sizeNumber > 100_000;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    add.mutate({
      numberBlock: {
        startPhoneNumber: start,
        size: sizeNumber,
        countryCode: countryCode.trim().toUpperCase(),
        numberType,
        capabilities,
      },
    });
  };
  const toggle = (c: Capability, on: boolean) =>
    setCapabilities((cs) => (on ? [...cs.filter((x) => x !== c), c] : cs.filter((x) => x !== c)));
  const rows = list.data?.pages.flatMap((p) => p.phoneNumbers) ?? [];
  return (
    <Page title="Inventory">
      <form className="card" onSubmit={submit} aria-label="Add a number block">
        <h2>Add a number block</h2>
        <div className="row">
          <Field
            label="First number (E.164)"
            id="block-start"
            hint={startInvalid ? "E.164, e.g. +61255501000." : undefined}
          >
            <input
              id="block-start"
              required
              inputMode="tel"
              value={start}
              aria-invalid={startInvalid}
              onChange={(e) => setStart(e.target.value)}
            />
          </Field>
          <Field label="How many" id="block-size" hint={sizeInvalid ? "1 to 100000." : undefined}>
            <input
              id="block-size"
              inputMode="numeric"
              value={size}
              aria-invalid={sizeInvalid}
              onChange={(e) => setSize(e.target.value)}
            />
          </Field>
          <Field label="Country" id="block-country">
            <input
              id="block-country"
              maxLength={2}
              value={countryCode}
              onChange={(e) => setCountryCode(e.target.value)}
            />
          </Field>
          <Field label="Type" id="block-type">
            <select
              id="block-type"
              value={numberType}
              onChange={(e) => setNumberType(Number(e.target.value) as NumberType)}
            >
              {TYPES.map((t) => (
                <option key={t} value={t}>
                  {enumName(NumberType, t)}
                </option>
              ))}
            </select>
          </Field>
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
        <button
          type="submit"
          className="primary"
          disabled={add.isPending || start === "" || startInvalid || sizeInvalid || capabilities.length === 0}
        >
          Add block
        </button>
        {add.isSuccess && <p role="status">Added the block.</p>}
        <ErrorBanner error={add.error} title="Could not add the block" />
      </form>
      <h2>Available numbers</h2>
      <form
        className="filters row"
        aria-label="Search the inventory"
        onSubmit={(e) => {
          e.preventDefault();
          setSearch({ countryCode: countryCode.trim().toUpperCase(), prefix: prefix.trim() });
        }}
      >
        <Field label="Starts with" id="inventory-prefix">
          <input id="inventory-prefix" value={prefix} onChange={(e) => setPrefix(e.target.value)} />
        </Field>
        <button type="submit">Search</button>
      </form>
      <ErrorBanner error={list.error} title="Could not search the inventory" />
      {!list.isPending && (
        <Table
          caption="Available numbers"
          rows={rows}
          rowKey={(n) => n.name}
          empty="No number available here: add a block."
          hasMore={list.hasNextPage}
          loadingMore={list.isFetchingNextPage}
          onLoadMore={() => void list.fetchNextPage()}
          columns={[
            { header: "Number", cell: (n) => <code>{n.phoneNumber}</code> },
            { header: "Type", cell: (n) => enumName(NumberType, n.numberType) },
            {
              header: "Capabilities",
              cell: (n) => n.capabilities.map((c) => enumName(Capability, c)).join(", "),
            },
          ]}
        />
      )}
    </Page>
  );
}
