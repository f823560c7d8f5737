CREATE TABLE "transcriptions" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"call_id" text NOT NULL,
	"recording_id" text NOT NULL,
	"state" text NOT NULL,
	"duration_ms" integer,
	"channel_count" integer NOT NULL,
	"ready_uri" text DEFAULT '' NOT NULL,
	"utterances" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "transcriptions_state_check" CHECK ("transcriptions"."state" in ('PENDING', 'COMPLETED', 'FAILED'))
);
--> statement-breakpoint
ALTER TABLE "recordings" ADD COLUMN "transcribe" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "recordings" ADD COLUMN "transcription_ready_uri" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "simulator_routes" ADD COLUMN "words" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "calls" ADD COLUMN "ended_by" text;--> statement-breakpoint
ALTER TABLE "calls" ADD COLUMN "sip_source_ip" text;--> statement-breakpoint
ALTER TABLE "transcriptions" ADD CONSTRAINT "transcriptions_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "transcriptions_project_create_time_idx" ON "transcriptions" USING btree ("project_id","create_time","id");--> statement-breakpoint
CREATE INDEX "transcriptions_project_call_create_time_idx" ON "transcriptions" USING btree ("project_id","call_id","create_time","id");--> statement-breakpoint
CREATE INDEX "transcriptions_recording_idx" ON "transcriptions" USING btree ("recording_id");