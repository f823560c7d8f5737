/**
 * The demo inventory of the embedded database: only numbers that
 * regulators reserve for drama, fiction and testing, so nobody real is ever
 * called, yet a newcomer can search and provision at once.
 *
 * - Australia (ACMA): the geographic ranges (02), (03), (07) and (08)
 *   5550 0000 to 5550 9999, and the fictitious mobiles 0491 570 006, 110,
 *   156, 157, 158, 159, 313 and 737.
 *
 * Capabilities decide what traffic a number takes (an incoming message to a
 * voice-only number is refused, src/numbering/capabilities.ts): mobiles and
 * the NANPA numbers are VOICE, SMS and MMS; geographic numbers are VOICE
 * only, except (02) 5550 1000 to 1999, VOICE and SMS, the block the README's
 * message examples use.
 * - United Kingdom (Ofcom): London 020 7946 0000 to 020 7946 0999. (Ofcom's
 *   drama mobiles, 07700 900xxx, are not valid numbers to libphonenumber, so
 *   the inventory would refuse them.)
 * - United States and Canada (NANPA): 555-0100 to 555-0199 in area codes
 *   202, 212 and 415.
 *
 * Seeding is idempotent: numbers already present are left as they are. It
 * runs when an embedded (PGlite) database is created (the build's template
 * is made with it, src/db/make-embedded-template.ts), not on later starts,
 * so the operator's changes to the inventory stay; a PostgreSQL deployment
 * starts with an empty inventory.
 */
import type { Capability, InventoryDomain, NewBlock } from "./domain.js";

const LOCAL_VOICE: Capability[] = ["VOICE"];
/** Geographic numbers that also take text messages (as some carriers' virtual numbers do). */
const LOCAL_VOICE_SMS: Capability[] = ["VOICE", "SMS"];
const MOBILE: Capability[] = ["VOICE", "SMS", "MMS"];

function block(
  startPhoneNumber: string,
  size: number,
  countryCode: string,
  numberType: NewBlock["numberType"],
  capabilities: Capability[],
): NewBlock {
  return { startPhoneNumber, size, countryCode, numberType, capabilities, sku: "", activationSku: "" };
}

const AU_FICTITIOUS_MOBILES = ["006", "110", "156", "157", "158", "159", "313", "737"].map(
  (n) => `+61491570${n}`,
);

export const DEMO_BLOCKS: readonly NewBlock[] = [
  block("+61255500000", 1_000, "AU", "LOCAL", LOCAL_VOICE),
  block("+61255501000", 1_000, "AU", "LOCAL", LOCAL_VOICE_SMS),
  block("+61255502000", 8_000, "AU", "LOCAL", LOCAL_VOICE),
  block("+61355500000", 10_000, "AU", "LOCAL", LOCAL_VOICE),
  block("+61755500000", 10_000, "AU", "LOCAL", LOCAL_VOICE),
  block("+61855500000", 10_000, "AU", "LOCAL", LOCAL_VOICE),
  ...AU_FICTITIOUS_MOBILES.map((n) => block(n, 1, "AU", "MOBILE", MOBILE)),
  block("+442079460000", 1_000, "GB", "LOCAL", LOCAL_VOICE),
  block("+12025550100", 100, "US", "LOCAL", MOBILE),
  block("+12125550100", 100, "US", "LOCAL", MOBILE),
  block("+14155550100", 100, "US", "LOCAL", MOBILE),
];

/**
 * Adds the demo inventory, keeping numbers already present (idempotent);
 * returns how many numbers were missing. A block that is complete is not
 * written again (one indexed count per block).
 */
export async function seedDemoInventory(inventory: InventoryDomain): Promise<number> {
  let added = 0;
  for (const b of DEMO_BLOCKS) {
    const present = await inventory.countBlock(b.startPhoneNumber, b.size);
    if (present >= b.size) continue;
    await inventory.addBlock(b, "keep");
    added += b.size - present;
  }
  return added;
}
