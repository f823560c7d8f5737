CREATE TABLE "sip_registrations" (
	"sip_domain_id" text NOT NULL,
	"user_id" text NOT NULL,
	"contact_uri" text NOT NULL,
	"source_address" text NOT NULL,
	"source_transport" text NOT NULL,
	"call_id" text NOT NULL,
	"cseq" bigint NOT NULL,
	"instance_id" text DEFAULT '' NOT NULL,
	"replica_id" text NOT NULL,
	"user_agent" text DEFAULT '' NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "sip_registrations_pk" PRIMARY KEY("sip_domain_id","user_id","contact_uri"),
	CONSTRAINT "sip_registrations_cseq_check" CHECK ("sip_registrations"."cseq" between 0 and 4294967295)
);
--> statement-breakpoint
CREATE TABLE "sip_trunks" (
	"id" text PRIMARY KEY NOT NULL,
	"display_name" text DEFAULT '' NOT NULL,
	"address" text NOT NULL,
	"transport" text NOT NULL,
	"username" text DEFAULT '' NOT NULL,
	"password" text,
	"inbound_networks" text[] NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"priority" integer DEFAULT 0 NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "sip_trunks_transport_check" CHECK ("sip_trunks"."transport" in ('UDP', 'TCP', 'TLS')),
	CONSTRAINT "sip_trunks_priority_check" CHECK ("sip_trunks"."priority" between 0 and 65535)
);
--> statement-breakpoint
CREATE TABLE "sip_users" (
	"sip_domain_id" text NOT NULL,
	"id" text NOT NULL,
	"project_id" text NOT NULL,
	"username" text NOT NULL,
	"display_name" text DEFAULT '' NOT NULL,
	"disabled" boolean DEFAULT false NOT NULL,
	"realm" text NOT NULL,
	"ha1_md5" text NOT NULL,
	"ha1_sha256" text NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "sip_users_pk" PRIMARY KEY("sip_domain_id","id"),
	CONSTRAINT "sip_users_ha1_md5_check" CHECK ("sip_users"."ha1_md5" ~ '^[0-9a-f]{32}$'),
	CONSTRAINT "sip_users_ha1_sha256_check" CHECK ("sip_users"."ha1_sha256" ~ '^[0-9a-f]{64}$')
);
--> statement-breakpoint
ALTER TABLE "sip_registrations" ADD CONSTRAINT "sip_registrations_user_fk" FOREIGN KEY ("sip_domain_id","user_id") REFERENCES "public"."sip_users"("sip_domain_id","id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sip_users" ADD CONSTRAINT "sip_users_sip_domain_id_sip_domains_id_fk" FOREIGN KEY ("sip_domain_id") REFERENCES "public"."sip_domains"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "sip_registrations_expires_at_idx" ON "sip_registrations" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "sip_trunks_create_time_idx" ON "sip_trunks" USING btree ("create_time","id");--> statement-breakpoint
CREATE UNIQUE INDEX "sip_users_domain_username_key" ON "sip_users" USING btree ("sip_domain_id","username");--> statement-breakpoint
CREATE INDEX "sip_users_domain_create_time_idx" ON "sip_users" USING btree ("sip_domain_id","create_time","id");