ALTER TABLE "calls" ADD COLUMN "ended_by" text;--> statement-breakpoint
ALTER TABLE "calls" ADD COLUMN "sip_source_ip" text;