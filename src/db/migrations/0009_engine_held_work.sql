ALTER TABLE "recordings" ADD COLUMN "engine_id" text;--> statement-breakpoint
ALTER TABLE "transcriptions" ADD COLUMN "engine_id" text;--> statement-breakpoint
CREATE INDEX "recordings_pending_engine_idx" ON "recordings" USING btree ("engine_id") WHERE "recordings"."state" = 'PENDING';--> statement-breakpoint
CREATE INDEX "transcriptions_pending_engine_idx" ON "transcriptions" USING btree ("engine_id") WHERE "transcriptions"."state" = 'PENDING';