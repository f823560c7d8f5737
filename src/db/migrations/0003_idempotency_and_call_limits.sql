CREATE TABLE "idempotency_keys" (
	"project_id" text NOT NULL,
	"key" text NOT NULL,
	"method" text NOT NULL,
	"request_hash" text NOT NULL,
	"resource_name" text NOT NULL,
	"response" text,
	"create_time" timestamp (3) with time zone NOT NULL,
	"expire_time" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY("project_id","key")
);
--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "idempotency_keys_expire_time_idx" ON "idempotency_keys" USING btree ("expire_time");--> statement-breakpoint
CREATE INDEX "calls_project_in_flight_idx" ON "calls" USING btree ("project_id") WHERE "calls"."state" in ('QUEUED', 'STARTING', 'RINGING', 'IN_PROGRESS');