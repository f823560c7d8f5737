ALTER TABLE "webhook_attempts" ADD COLUMN "response_body" text;--> statement-breakpoint
ALTER TABLE "webhook_attempts" ADD COLUMN "response_truncated" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_events" ADD COLUMN "call_id" text;--> statement-breakpoint
CREATE INDEX "webhook_events_project_call_idx" ON "webhook_events" USING btree ("project_id","call_id","create_time" DESC NULLS LAST) WHERE "webhook_events"."call_id" is not null;