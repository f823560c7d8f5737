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
ALTER TABLE "api_key_bindings" ADD CONSTRAINT "api_key_bindings_api_key_id_api_keys_id_fk" FOREIGN KEY ("api_key_id") REFERENCES "public"."api_keys"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_key_bindings" ADD CONSTRAINT "api_key_bindings_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "unsubscribers" ADD CONSTRAINT "unsubscribers_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "regulatory_listings" ADD CONSTRAINT "regulatory_listings_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "api_key_bindings_project_idx" ON "api_key_bindings" USING btree ("project_id");--> statement-breakpoint
CREATE INDEX "api_keys_create_time_id_idx" ON "api_keys" USING btree ("create_time" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "projects_create_time_id_idx" ON "projects" USING btree ("create_time" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE UNIQUE INDEX "unsubscribers_project_phone_key" ON "unsubscribers" USING btree ("project_id","phone");--> statement-breakpoint
CREATE INDEX "unsubscribers_project_create_time_idx" ON "unsubscribers" USING btree ("project_id","create_time","id");--> statement-breakpoint
CREATE INDEX "regulatory_listings_project_create_time_idx" ON "regulatory_listings" USING btree ("project_id","create_time","id");--> statement-breakpoint
CREATE INDEX "regulatory_listings_project_region_create_time_idx" ON "regulatory_listings" USING btree ("project_id","region_code","create_time","id");