CREATE TABLE "call_engines" (
	"id" text PRIMARY KEY NOT NULL,
	"start_time" timestamp (3) with time zone NOT NULL,
	"heartbeat_time" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "calls" ADD COLUMN "engine_id" text;