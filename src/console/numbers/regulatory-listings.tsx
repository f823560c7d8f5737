/**
 * A project's regulatory listings (who uses its numbers, and where): the
 * list, creating one for a person or a business at an address, deleting
 * one (refused while a number uses it: the API's message is shown), and
 * the operator's review (valid, verified), which decides whether numbers
 * using the listing are compliant (docs/numbers.md).
 */
import { useInfiniteQuery, useMutation } from "@connectrpc/connect-query";
import { useState } from "react";
import {
  type RegulatoryListing,
  RegulatoryListings,
} from "../../../gen/enfonica/numbering/v1beta1/regulatory_listings_pb.js";
import { NumberingAdmin } from "../../../gen/switchboard/admin/v1/numbering_pb.js";
import { useSession } from "../app.js";
import { useCan } from "../kit/can.js";
import { ErrorBanner } from "../kit/errors.js";
import { SelectField, TextField } from "../kit/fields.js";
import { FormCard } from "../kit/form-card.js";
import { lastSegment, time } from "../kit/format.js";
import { ListTable, PAGED, pagedRows } from "../kit/list.js";
import { Page } from "../kit/page.js";
import { useRefresh } from "../kit/refresh.js";

const REGION = /^[A-Z]{2}$/;
const ENTITIES = ["Business", "Person"] as const;

function who(l: RegulatoryListing): string {
  const e = l.entity;
  if (e.case === "business") return e.value.business;
  if (e.case === "person") return `${e.value.givenName} ${e.value.familyName}`;
  return "—";
}

function where(l: RegulatoryListing): string {
  const a = l.address;
  if (a === undefined) return "—";
  return [...a.addressLines, a.locality, a.administrativeArea, a.postalCode, a.regionCode]
    .filter((p) => p !== "")
    .join(", ");
}

export default function RegulatoryListingsPage() {
  const { session } = useSession();
  const canCreate = useCan(RegulatoryListings.method.createRegulatoryListing, { parent: session.project });
  const canDelete = useCan(RegulatoryListings.method.deleteRegulatoryListing, {
    name: `${session.project}/regulatoryListings/`,
  });
  const list = useInfiniteQuery(
    RegulatoryListings.method.listRegulatoryListings,
    { parent: session.project, pageSize: 50, pageToken: "" },
    PAGED,
  );
  const rows = pagedRows(list, (p) => p.regulatoryListings);
  return (
    <Page title="Regulatory listings">
      <p className="muted">
        A listing says who uses a number and where. A number is compliant when its listing is valid, in the
        number's country, and verified where its type needs it; the operator reviews listings.
      </p>
      {canCreate === true && <CreateListing />}
      <ListTable
        list={list}
        errorTitle="Could not list regulatory listings"
        caption="Regulatory listings"
        rows={rows}
        rowKey={(l) => l.name}
        empty={canCreate === true ? "No listings yet: create one above." : "No listings yet."}
        columns={[
          { header: "Listing", cell: (l) => <code>{lastSegment(l.name)}</code> },
          { header: "Name", cell: (l) => l.displayName },
          { header: "End user", cell: (l) => who(l) },
          { header: "Address", cell: (l) => where(l) },
          { header: "Valid", cell: (l) => (l.valid ? "Yes" : "No") },
          { header: "Verified", cell: (l) => (l.verified ? "Yes" : "No") },
          { header: "Created", cell: (l) => time(l.createTime) },
          {
            header: "Actions",
            cell: (l) => (
              <span className="actions">
                {session.operator && <Review listing={l} />}
                {canDelete === true && <DeleteListing listing={l} />}
              </span>
            ),
          },
        ]}
      />
    </Page>
  );
}

function CreateListing() {
  const { session } = useSession();
  const refresh = useRefresh(RegulatoryListings);
  const [displayName, setDisplayName] = useState("");
  const [entity, setEntity] = useState<(typeof ENTITIES)[number]>("Business");
  const [business, setBusiness] = useState("");
  const [givenName, setGivenName] = useState("");
  const [familyName, setFamilyName] = useState("");
  const [line1, setLine1] = useState("");
  const [line2, setLine2] = useState("");
  const [locality, setLocality] = useState("");
  const [area, setArea] = useState("");
  const [postalCode, setPostalCode] = useState("");
  const [region, setRegion] = useState("AU");
  const create = useMutation(RegulatoryListings.method.createRegulatoryListing, { onSuccess: refresh });
  const regionBad = !REGION.test(region);
  const named =
    entity === "Business" ? business.trim() !== "" : givenName.trim() !== "" && familyName.trim() !== "";
  const submit = () =>
    create.mutate({
      parent: session.project,
      regulatoryListing: {
        displayName,
        entity:
          entity === "Business"
            ? { case: "business", value: { business: business.trim() } }
            : { case: "person", value: { givenName: givenName.trim(), familyName: familyName.trim() } },
        address: {
          addressLines: [line1.trim(), line2.trim()].filter((l) => l !== ""),
          locality: locality.trim(),
          administrativeArea: area.trim(),
          postalCode: postalCode.trim(),
          regionCode: region,
        },
      },
    });
  return (
    <FormCard
      label="Create a listing"
      onSubmit={submit}
      submit="Create listing"
      disabled={create.isPending || regionBad || !named || line1.trim() === ""}
      status={
        create.isSuccess && (
          <p role="status">
            Created <code>{lastSegment(create.data.name)}</code>; the operator reviews it.
          </p>
        )
      }
      error={create.error}
      errorTitle="Could not create the listing"
    >
      <div className="row">
        <TextField label="Display name" id="listing-name" value={displayName} onChange={setDisplayName} />
        <SelectField
          label="End user"
          id="listing-entity"
          options={ENTITIES}
          value={entity}
          onChange={(v) => setEntity(v as (typeof ENTITIES)[number])}
        />
      </div>
      {entity === "Business" ? (
        <TextField
          label="Business name"
          id="listing-business"
          required
          value={business}
          onChange={setBusiness}
        />
      ) : (
        <div className="row">
          <TextField
            label="Given name"
            id="listing-given"
            required
            value={givenName}
            onChange={setGivenName}
          />
          <TextField
            label="Family name"
            id="listing-family"
            required
            value={familyName}
            onChange={setFamilyName}
          />
        </div>
      )}
      <div className="row">
        <TextField label="Address line 1" id="listing-line1" required value={line1} onChange={setLine1} />
        <TextField label="Address line 2" id="listing-line2" value={line2} onChange={setLine2} />
      </div>
      <div className="row">
        <TextField label="Locality" id="listing-locality" value={locality} onChange={setLocality} />
        <TextField label="State or region" id="listing-area" value={area} onChange={setArea} />
        <TextField label="Postal code" id="listing-postcode" value={postalCode} onChange={setPostalCode} />
        <TextField
          label="Country"
          id="listing-region"
          maxLength={2}
          invalid={regionBad && "Two capital letters, e.g. AU."}
          value={region}
          onChange={setRegion}
        />
      </div>
    </FormCard>
  );
}

/** The operator's review: mark the listing valid and verified, or take either back. */
function Review({ listing }: { listing: RegulatoryListing }) {
  const refresh = useRefresh(RegulatoryListings);
  const review = useMutation(NumberingAdmin.method.reviewRegulatoryListing, { onSuccess: refresh });
  const id = lastSegment(listing.name);
  return (
    <>
      <button
        type="button"
        disabled={review.isPending}
        aria-label={`${listing.valid ? "Mark invalid" : "Mark valid"} ${id}`}
        onClick={() => review.mutate({ name: listing.name, valid: !listing.valid })}
      >
        {listing.valid ? "Mark invalid" : "Mark valid"}
      </button>
      <button
        type="button"
        disabled={review.isPending}
        aria-label={`${listing.verified ? "Mark unverified" : "Mark verified"} ${id}`}
        onClick={() => review.mutate({ name: listing.name, verified: !listing.verified })}
      >
        {listing.verified ? "Mark unverified" : "Mark verified"}
      </button>
      <ErrorBanner error={review.error} title={`Could not review ${id}`} />
    </>
  );
}

function DeleteListing({ listing }: { listing: RegulatoryListing }) {
  const refresh = useRefresh(RegulatoryListings);
  const [confirming, setConfirming] = useState(false);
  const remove = useMutation(RegulatoryListings.method.deleteRegulatoryListing, { onSuccess: refresh });
  const id = lastSegment(listing.name);
  if (remove.error) return <ErrorBanner error={remove.error} title={`Could not delete ${id}`} />;
  return confirming ? (
    <button
      type="button"
      className="danger"
      disabled={remove.isPending}
      onClick={() => remove.mutate({ name: listing.name })}
    >
      Confirm deleting {id}
    </button>
  ) : (
    <button type="button" onClick={() => setConfirming(true)} aria-label={`Delete ${id}`}>
      Delete
    </button>
  );
}
