/**
 * A project's phone numbers: its instances (instances.tsx: filter by
 * prefix, released ones too; edit, release, move, split a range); and the
 * inventory search, provisioning a number from it (a regulatory listing
 * attached, optionally); for the operator, the
 * registering of a port-in. Writes are offered only
 * when the credential may make them (kit/can.ts).
 */
import { useInfiniteQuery, useMutation, useQuery } from "@connectrpc/connect-query";
import { type FormEvent, useState } from "react";
import { PhoneNumberInstances } from "../../../gen/enfonica/numbering/v1beta1/phone_number_instances_pb.js";
import {
  PhoneNumber_PhoneNumberType as NumberType,
  PhoneNumbers,
} from "../../../gen/enfonica/numbering/v1beta1/phone_numbers_pb.js";
import { RegulatoryListings } from "../../../gen/enfonica/numbering/v1beta1/regulatory_listings_pb.js";
import { useSession } from "../app.js";
import { useCan } from "../kit/can.js";
import { ErrorBanner } from "../kit/errors.js";
import { EnumSelect, TextField } from "../kit/fields.js";
import { lastSegment } from "../kit/format.js";
import { ListTable, PAGED, pagedRows } from "../kit/list.js";
import { parseLines } from "../kit/lists.js";
import { Field, Page } from "../kit/page.js";
import { useRefresh } from "../kit/refresh.js";
import { Instances } from "./instances.js";
import { NUMBER_TYPES, PHONE_NUMBER_COLUMNS } from "./phone-numbers.js";
import { PortIn } from "./port-in.js";

export default function NumbersPage() {
  const { session } = useSession();
  const canWrite = useCan(PhoneNumberInstances.method.createPhoneNumberInstance, { parent: session.project });
  return (
    <Page title="Numbers">
      <Instances
        title="The project's numbers"
        empty="The project has no numbers yet: search the inventory below and provision one."
      />
      <Search canWrite={canWrite === true} />
      {session.operator && <PortIn />}
    </Page>
  );
}

function Search({ canWrite }: { canWrite: boolean }) {
  const { session } = useSession();
  const refresh = useRefresh(PhoneNumberInstances);
  const [countryCode, setCountryCode] = useState("AU");
  const [numberType, setNumberType] = useState<NumberType>(NumberType.PHONE_NUMBER_TYPE_UNSPECIFIED);
  const [prefix, setPrefix] = useState("");
  const [handler, setHandler] = useState("");
  const [listing, setListing] = useState("");
  const [query, setQuery] = useState<
    { countryCode: string; numberType: NumberType; prefix: string } | undefined
  >(undefined);
  const search = useInfiniteQuery(
    PhoneNumbers.method.searchPhoneNumbers,
    { ...(query ?? { countryCode: "AU", numberType: 0, prefix: "" }), pageSize: 20, pageToken: "" },
    { ...PAGED, enabled: query !== undefined },
  );
  const provision = useMutation(PhoneNumberInstances.method.createPhoneNumberInstance, {
    onSuccess: async () => {
      await refresh();
      await search.refetch();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setQuery({ countryCode: countryCode.trim().toUpperCase(), numberType, prefix: prefix.trim() });
  };
  const rows = pagedRows(search, (p) => p.phoneNumbers);
  return (
    <section aria-labelledby="search-title">
      <h2 id="search-title">Find a number</h2>
      <form className="filters row" onSubmit={submit} aria-label="Search the inventory">
        <TextField
          label="Country"
          id="search-country"
          maxLength={2}
          value={countryCode}
          onChange={setCountryCode}
        />
        <EnumSelect
          label="Type"
          id="search-type"
          enumType={NumberType}
          any={NumberType.PHONE_NUMBER_TYPE_UNSPECIFIED}
          options={NUMBER_TYPES}
          value={numberType}
          onChange={setNumberType}
        />
        <TextField label="Starts with" id="search-prefix" value={prefix} onChange={setPrefix} />
        <button type="submit">Search</button>
      </form>
      {canWrite && (
        <div className="row">
          <TextField
            label="Call handler URI for numbers provisioned here (optional)"
            id="provision-handler"
            type="url"
            value={handler}
            onChange={setHandler}
          />
          <ListingSelect value={listing} onChange={setListing} />
        </div>
      )}
      {query !== undefined && (
        <ListTable
          list={search}
          errorTitle="Could not search the inventory"
          notices={
            <>
              <ErrorBanner error={provision.error} title="Could not provision the number" />
              {provision.isSuccess && (
                <p role="status">
                  Provisioned <code>{provision.data.phoneNumber?.phoneNumber}</code>.
                </p>
              )}
            </>
          }
          loading="Searching…"
          caption="Numbers available"
          rows={rows}
          rowKey={(n) => n.name}
          empty="No number matches: try another type or prefix."
          columns={[
            ...PHONE_NUMBER_COLUMNS,
            {
              header: "Actions",
              cell: (n) =>
                canWrite ? (
                  <button
                    type="button"
                    disabled={provision.isPending}
                    aria-label={`Provision ${n.phoneNumber}`}
                    onClick={() =>
                      provision.mutate({
                        parent: session.project,
                        phoneNumberInstance: {
                          phoneNumber: { phoneNumber: n.phoneNumber },
                          incomingCallHandlerUris: parseLines(handler),
                        },
                        regulatoryListing: listing,
                      })
                    }
                  >
                    Provision
                  </button>
                ) : null,
            },
          ]}
        />
      )}
    </section>
  );
}

/**
 * The project's regulatory listings to attach to numbers provisioned here;
 * nothing when it has none (or the credential may not list them).
 */
function ListingSelect({ value, onChange }: { value: string; onChange: (listing: string) => void }) {
  const { session } = useSession();
  const listings = useQuery(RegulatoryListings.method.listRegulatoryListings, {
    parent: session.project,
    pageSize: 100,
  });
  const rows = listings.data?.regulatoryListings ?? [];
  if (rows.length === 0) return null;
  return (
    <Field label="Regulatory listing to attach (optional)" id="provision-listing">
      <select id="provision-listing" value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="">None</option>
        {rows.map((l) => (
          <option key={l.name} value={l.name}>
            {l.displayName || lastSegment(l.name)}
          </option>
        ))}
      </select>
    </Field>
  );
}
