CREATE TABLE "api_key_bindings" (
	"api_key_id" text NOT NULL,
	"project_id" text NOT NULL,
	"position" integer NOT NULL,
	"roles" text[] NOT NULL,
	"permissions" text[] NOT NULL,
	CONSTRAINT "api_key_bindings_pk" PRIMARY KEY("api_key_id","project_id")
);
--> statement-breakpoint
CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"display_name" text DEFAULT '' NOT NULL,
	"secret_hash" text NOT NULL,
	"secret_prefix" text NOT NULL,
	"disabled" boolean DEFAULT false NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "projects" (
	"id" text PRIMARY KEY NOT NULL,
	"display_name" text DEFAULT '' NOT NULL,
	"signing_key" text NOT NULL,
	"signing_key_create_time" timestamp (3) with time zone NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_attempts" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"event_id" text NOT NULL,
	"round" integer NOT NULL,
	"uri" text NOT NULL,
	"start_time" timestamp (3) with time zone NOT NULL,
	"finish_time" timestamp (3) with time zone NOT NULL,
	"status_code" integer,
	"error" text,
	"duration_ms" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_events" (
	"id" text PRIMARY KEY NOT NULL,
	"seq" bigserial NOT NULL,
	"project_id" text NOT NULL,
	"event_type" text NOT NULL,
	"ordering_key" text,
	"uris" text[] NOT NULL,
	"body" text NOT NULL,
	"state" text NOT NULL,
	"attempt_count" integer DEFAULT 0 NOT NULL,
	"next_attempt_time" timestamp (3) with time zone,
	"lease_owner" text,
	"lease_expire_time" timestamp (3) with time zone,
	"create_time" timestamp (3) with time zone NOT NULL,
	"complete_time" timestamp (3) with time zone,
	CONSTRAINT "webhook_events_state_check" CHECK ("webhook_events"."state" in ('PENDING', 'DELIVERED', 'FAILED'))
);
--> statement-breakpoint
CREATE TABLE "messages" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"to" text NOT NULL,
	"from" text NOT NULL,
	"body" text NOT NULL,
	"direction" text NOT NULL,
	"status" text NOT NULL,
	"encoding" text NOT NULL,
	"segment_count" integer NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "messages_direction_check" CHECK ("messages"."direction" in ('OUTGOING', 'INCOMING')),
	CONSTRAINT "messages_status_check" CHECK ("messages"."status" in ('QUEUED', 'SENDING', 'SENT', 'FAILED', 'DELIVERED', 'UNDELIVERED', 'RECEIVED')),
	CONSTRAINT "messages_encoding_check" CHECK ("messages"."encoding" in ('GSM7', 'UCS2')),
	CONSTRAINT "messages_segment_count_check" CHECK ("messages"."segment_count" >= 1)
);
--> statement-breakpoint
CREATE TABLE "unsubscribers" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"phone" text NOT NULL,
	"unsubscribe_method" text NOT NULL,
	"labels" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "unsubscribers_unsubscribe_method_check" CHECK ("unsubscribers"."unsubscribe_method" in ('URL', 'MESSAGE', 'MANUAL'))
);
--> statement-breakpoint
CREATE TABLE "inventory_numbers" (
	"phone_number" text collate "C" PRIMARY KEY NOT NULL,
	"country_code" text NOT NULL,
	"number_type" text NOT NULL,
	"voice" boolean DEFAULT false NOT NULL,
	"sms" boolean DEFAULT false NOT NULL,
	"mms" boolean DEFAULT false NOT NULL,
	"sku" text NOT NULL,
	"activation_sku" text NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "inventory_numbers_number_type_check" CHECK ("inventory_numbers"."number_type" in ('LOCAL', 'NATIONAL', 'MOBILE', 'TOLL_FREE', 'SHARED_RATE'))
);
--> statement-breakpoint
CREATE TABLE "number_holdings" (
	"phone_number" text collate "C" PRIMARY KEY NOT NULL,
	"instance_id" text NOT NULL,
	"release_time" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "phone_number_instances" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"phone_number" text collate "C" NOT NULL,
	"range_end" text collate "C",
	"range_size" integer,
	"country_code" text NOT NULL,
	"number_type" text NOT NULL,
	"voice" boolean DEFAULT false NOT NULL,
	"sms" boolean DEFAULT false NOT NULL,
	"mms" boolean DEFAULT false NOT NULL,
	"sku" text DEFAULT '' NOT NULL,
	"activation_sku" text DEFAULT '' NOT NULL,
	"display_name" text DEFAULT '' NOT NULL,
	"labels" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"incoming_message_handler_uris" text[] DEFAULT '{}' NOT NULL,
	"incoming_call_handler_uris" text[] DEFAULT '{}' NOT NULL,
	"call_recording_trigger" text DEFAULT 'DISABLED' NOT NULL,
	"lifecycle_state" text NOT NULL,
	"regulatory_listing_id" text,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL,
	"activate_time" timestamp (3) with time zone,
	"delete_time" timestamp (3) with time zone,
	CONSTRAINT "phone_number_instances_lifecycle_state_check" CHECK ("phone_number_instances"."lifecycle_state" in ('ACTIVE', 'DELETED', 'SUSPENDED', 'PENDING')),
	CONSTRAINT "phone_number_instances_call_recording_trigger_check" CHECK ("phone_number_instances"."call_recording_trigger" in ('DISABLED', 'ANSWER', 'BRIDGE')),
	CONSTRAINT "phone_number_instances_range_check" CHECK (("phone_number_instances"."range_end" is null and "phone_number_instances"."range_size" is null)
        or ("phone_number_instances"."range_end" is not null and "phone_number_instances"."range_size" >= 1
            and length("phone_number_instances"."range_end") = length("phone_number_instances"."phone_number") and "phone_number_instances"."range_end" >= "phone_number_instances"."phone_number"))
);
--> statement-breakpoint
CREATE TABLE "regulatory_listings" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"display_name" text DEFAULT '' NOT NULL,
	"address_lines" text[] NOT NULL,
	"locality" text DEFAULT '' NOT NULL,
	"administrative_area" text DEFAULT '' NOT NULL,
	"postal_code" text DEFAULT '' NOT NULL,
	"region_code" text NOT NULL,
	"person_given_name" text,
	"person_family_name" text,
	"business_name" text,
	"valid" boolean DEFAULT false NOT NULL,
	"verified" boolean DEFAULT false NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "regulatory_listings_entity_check" CHECK (("regulatory_listings"."person_given_name" is not null and "regulatory_listings"."person_family_name" is not null and "regulatory_listings"."business_name" is null)
        or ("regulatory_listings"."person_given_name" is null and "regulatory_listings"."person_family_name" is null and "regulatory_listings"."business_name" is not null))
);
--> statement-breakpoint
CREATE TABLE "recordings" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"call_id" text NOT NULL,
	"source" text NOT NULL,
	"state" text NOT NULL,
	"duration_ms" integer,
	"channel_count" integer NOT NULL,
	"post_processing" text[] DEFAULT '{}' NOT NULL,
	"error_code" text,
	"ready_uri" text DEFAULT '' NOT NULL,
	"renditions" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"start_time" timestamp (3) with time zone,
	"create_time" timestamp (3) with time zone NOT NULL,
	"complete_time" timestamp (3) with time zone,
	CONSTRAINT "recordings_source_check" CHECK ("recordings"."source" in ('RECORD_ACTION', 'CALL_RECORDING')),
	CONSTRAINT "recordings_state_check" CHECK ("recordings"."state" in ('PENDING', 'SUCCEEDED', 'EMPTY', 'FAILED')),
	CONSTRAINT "recordings_channel_count_check" CHECK ("recordings"."channel_count" in (1, 2))
);
--> statement-breakpoint
CREATE TABLE "simulator_routes" (
	"id" text PRIMARY KEY NOT NULL,
	"prefix" text NOT NULL,
	"outcome" text NOT NULL,
	"ring_seconds" integer NOT NULL,
	"talk_seconds" integer NOT NULL,
	"audio" text NOT NULL,
	"digits" text DEFAULT '' NOT NULL,
	"error_code" text DEFAULT '' NOT NULL,
	"error_message" text DEFAULT '' NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sip_domain_aliases" (
	"sip_domain_id" text NOT NULL,
	"id" text NOT NULL,
	"project_id" text NOT NULL,
	"display_name" text DEFAULT '' NOT NULL,
	"load_balancer" jsonb,
	"managed" boolean DEFAULT false NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "sip_domain_aliases_pk" PRIMARY KEY("sip_domain_id","id"),
	CONSTRAINT "sip_domain_aliases_load_balancer_check" CHECK (("sip_domain_aliases"."load_balancer" is null) = "sip_domain_aliases"."managed")
);
--> statement-breakpoint
CREATE TABLE "sip_domain_ids" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sip_domains" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"display_name" text DEFAULT '' NOT NULL,
	"allow_register" boolean DEFAULT false NOT NULL,
	"call_termination_mode" text NOT NULL,
	"call_termination_handler_uris" text[] NOT NULL,
	"cidr_blocks" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"call_recording" jsonb,
	"type" text NOT NULL,
	"channel_limit" integer,
	"collab_verified" boolean,
	"collab_verification_record" text,
	"collab_verification_record_time" timestamp (3) with time zone,
	"collab_verify_time" timestamp (3) with time zone,
	"domain_optional" boolean DEFAULT false NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL,
	"delete_time" timestamp (3) with time zone,
	CONSTRAINT "sip_domains_type_check" CHECK ("sip_domains"."type" in ('STANDARD', 'COLLAB_DIRECT_ROUTING')),
	CONSTRAINT "sip_domains_call_termination_mode_check" CHECK ("sip_domains"."call_termination_mode" in ('TERMINATION_MODE_DISABLED', 'PSTN_TRUNK', 'PROGRAMMABLE')),
	CONSTRAINT "sip_domains_collab_check" CHECK (case when "sip_domains"."type" = 'COLLAB_DIRECT_ROUTING'
        then "sip_domains"."channel_limit" between 1 and 100 and "sip_domains"."collab_verified" is not null and not "sip_domains"."domain_optional"
        else "sip_domains"."channel_limit" is null and "sip_domains"."collab_verified" is null end)
);
--> statement-breakpoint
CREATE TABLE "calls" (
	"id" text PRIMARY KEY NOT NULL,
	"project_id" text NOT NULL,
	"to" text NOT NULL,
	"from" text NOT NULL,
	"is_private" boolean DEFAULT false NOT NULL,
	"labels" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"state" text NOT NULL,
	"direction" text NOT NULL,
	"transport" text NOT NULL,
	"create_method" text NOT NULL,
	"error_code" text DEFAULT '' NOT NULL,
	"error_message" text DEFAULT '' NOT NULL,
	"handler_uris" text[] NOT NULL,
	"state_update_uri" text DEFAULT '' NOT NULL,
	"timeout_seconds" integer NOT NULL,
	"originating_call_id" text,
	"parent_call_id" text,
	"bridged" boolean DEFAULT false NOT NULL,
	"price_currency" text,
	"price_units" bigint,
	"price_nanos" integer,
	"answer_duration_ms" bigint,
	"create_time" timestamp (3) with time zone NOT NULL,
	"start_time" timestamp (3) with time zone,
	"ring_time" timestamp (3) with time zone,
	"answer_time" timestamp (3) with time zone,
	"end_time" timestamp (3) with time zone,
	CONSTRAINT "calls_state_check" CHECK ("calls"."state" in ('QUEUED', 'STARTING', 'RINGING', 'IN_PROGRESS', 'COMPLETED', 'FAILED', 'NOT_ANSWERED', 'BUSY', 'REJECTED'))
);
--> statement-breakpoint
ALTER TABLE "api_key_bindings" ADD CONSTRAINT "api_key_bindings_api_key_id_api_keys_id_fk" FOREIGN KEY ("api_key_id") REFERENCES "public"."api_keys"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_key_bindings" ADD CONSTRAINT "api_key_bindings_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_event_id_webhook_events_id_fk" FOREIGN KEY ("event_id") REFERENCES "public"."webhook_events"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_events" ADD CONSTRAINT "webhook_events_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messages" ADD CONSTRAINT "messages_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "unsubscribers" ADD CONSTRAINT "unsubscribers_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "number_holdings" ADD CONSTRAINT "number_holdings_instance_id_phone_number_instances_id_fk" FOREIGN KEY ("instance_id") REFERENCES "public"."phone_number_instances"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "phone_number_instances" ADD CONSTRAINT "phone_number_instances_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "phone_number_instances" ADD CONSTRAINT "phone_number_instances_regulatory_listing_id_regulatory_listings_id_fk" FOREIGN KEY ("regulatory_listing_id") REFERENCES "public"."regulatory_listings"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "regulatory_listings" ADD CONSTRAINT "regulatory_listings_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "recordings" ADD CONSTRAINT "recordings_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sip_domain_aliases" ADD CONSTRAINT "sip_domain_aliases_sip_domain_id_sip_domains_id_fk" FOREIGN KEY ("sip_domain_id") REFERENCES "public"."sip_domains"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sip_domains" ADD CONSTRAINT "sip_domains_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "calls" ADD CONSTRAINT "calls_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "api_key_bindings_project_idx" ON "api_key_bindings" USING btree ("project_id");--> statement-breakpoint
CREATE INDEX "api_keys_create_time_id_idx" ON "api_keys" USING btree ("create_time" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "projects_create_time_id_idx" ON "projects" USING btree ("create_time" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "webhook_attempts_event_idx" ON "webhook_attempts" USING btree ("event_id","id");--> statement-breakpoint
CREATE INDEX "webhook_events_due_idx" ON "webhook_events" USING btree ("next_attempt_time") WHERE "webhook_events"."state" = 'PENDING';--> statement-breakpoint
CREATE INDEX "webhook_events_ordering_idx" ON "webhook_events" USING btree ("project_id","ordering_key","seq") WHERE "webhook_events"."state" = 'PENDING' and "webhook_events"."ordering_key" is not null;--> statement-breakpoint
CREATE INDEX "webhook_events_project_create_time_idx" ON "webhook_events" USING btree ("project_id","create_time" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "messages_project_create_time_idx" ON "messages" USING btree ("project_id","create_time","id");--> statement-breakpoint
CREATE UNIQUE INDEX "unsubscribers_project_phone_key" ON "unsubscribers" USING btree ("project_id","phone");--> statement-breakpoint
CREATE INDEX "unsubscribers_project_create_time_idx" ON "unsubscribers" USING btree ("project_id","create_time","id");--> statement-breakpoint
CREATE INDEX "inventory_numbers_country_type_number_idx" ON "inventory_numbers" USING btree ("country_code","number_type","phone_number");--> statement-breakpoint
CREATE INDEX "number_holdings_instance_number_idx" ON "number_holdings" USING btree ("instance_id","phone_number");--> statement-breakpoint
CREATE INDEX "phone_number_instances_project_create_time_idx" ON "phone_number_instances" USING btree ("project_id","create_time","id");--> statement-breakpoint
CREATE INDEX "phone_number_instances_listing_idx" ON "phone_number_instances" USING btree ("regulatory_listing_id");--> statement-breakpoint
CREATE INDEX "regulatory_listings_project_create_time_idx" ON "regulatory_listings" USING btree ("project_id","create_time","id");--> statement-breakpoint
CREATE INDEX "regulatory_listings_project_region_create_time_idx" ON "regulatory_listings" USING btree ("project_id","region_code","create_time","id");--> statement-breakpoint
CREATE INDEX "recordings_project_create_time_idx" ON "recordings" USING btree ("project_id","create_time","id");--> statement-breakpoint
CREATE INDEX "recordings_project_call_create_time_idx" ON "recordings" USING btree ("project_id","call_id","create_time","id");--> statement-breakpoint
CREATE UNIQUE INDEX "simulator_routes_prefix_key" ON "simulator_routes" USING btree ("prefix");--> statement-breakpoint
CREATE INDEX "simulator_routes_create_time_id_idx" ON "simulator_routes" USING btree ("create_time" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "sip_domain_aliases_domain_create_time_idx" ON "sip_domain_aliases" USING btree ("sip_domain_id","create_time","id");--> statement-breakpoint
CREATE INDEX "sip_domains_project_create_time_idx" ON "sip_domains" USING btree ("project_id","create_time","id");--> statement-breakpoint
CREATE INDEX "sip_domains_domain_optional_idx" ON "sip_domains" USING btree ("id") WHERE "sip_domains"."domain_optional" and "sip_domains"."delete_time" is null;--> statement-breakpoint
CREATE INDEX "calls_project_create_time_idx" ON "calls" USING btree ("project_id","create_time","id");