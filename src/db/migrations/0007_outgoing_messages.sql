ALTER TABLE "messages" ADD COLUMN "status_update_url" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "reply_url" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "validity_period_seconds" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "smart_encoding" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "error_code" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "error_message" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "price_currency" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "price_units" bigint;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "price_nanos" integer;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "create_identity" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "send_time" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "deliver_time" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "labels" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "classification" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "unsubscribe_content_behavior" text;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "opt_out_token_hash" text;--> statement-breakpoint
ALTER TABLE "simulator_routes" ADD COLUMN "message_outcome" text DEFAULT 'DELIVER' NOT NULL;--> statement-breakpoint
ALTER TABLE "simulator_routes" ADD COLUMN "message_deliver_seconds" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "simulator_routes" ADD COLUMN "message_error_code" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "simulator_routes" ADD COLUMN "message_error_message" text DEFAULT '' NOT NULL;--> statement-breakpoint
CREATE INDEX "messages_from_to_create_time_idx" ON "messages" USING btree ("from","to","create_time");--> statement-breakpoint
CREATE UNIQUE INDEX "messages_opt_out_token_hash_key" ON "messages" USING btree ("opt_out_token_hash");