ALTER TABLE "calls" ADD COLUMN "sip_call_id" text;
