DROP INDEX "webhook_events_due_idx";--> statement-breakpoint
ALTER TABLE "webhook_events" ADD COLUMN "ready" boolean DEFAULT true NOT NULL;--> statement-breakpoint
CREATE INDEX "webhook_events_ready_idx" ON "webhook_events" USING btree ("next_attempt_time","seq") WHERE "webhook_events"."state" = 'PENDING' and "webhook_events"."ready";