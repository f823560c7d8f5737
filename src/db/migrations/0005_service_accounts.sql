CREATE TABLE "oauth_access_tokens" (
	"id" text PRIMARY KEY NOT NULL,
	"token_hash" text NOT NULL,
	"service_account_id" text NOT NULL,
	"key_id" text NOT NULL,
	"services" text[] NOT NULL,
	"expire_time" timestamp (3) with time zone NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "oauth_used_assertions" (
	"assertion_hash" text PRIMARY KEY NOT NULL,
	"expire_time" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "service_account_bindings" (
	"service_account_id" text NOT NULL,
	"project_id" text NOT NULL,
	"position" integer NOT NULL,
	"roles" text[] NOT NULL,
	"permissions" text[] NOT NULL,
	CONSTRAINT "service_account_bindings_pk" PRIMARY KEY("service_account_id","project_id")
);
--> statement-breakpoint
CREATE TABLE "service_account_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"service_account_id" text NOT NULL,
	"public_key" text NOT NULL,
	"disabled" boolean DEFAULT false NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "service_accounts" (
	"id" text PRIMARY KEY NOT NULL,
	"display_name" text DEFAULT '' NOT NULL,
	"disabled" boolean DEFAULT false NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "oauth_access_tokens" ADD CONSTRAINT "oauth_access_tokens_service_account_id_service_accounts_id_fk" FOREIGN KEY ("service_account_id") REFERENCES "public"."service_accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_access_tokens" ADD CONSTRAINT "oauth_access_tokens_key_id_service_account_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."service_account_keys"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "service_account_bindings" ADD CONSTRAINT "service_account_bindings_service_account_id_service_accounts_id_fk" FOREIGN KEY ("service_account_id") REFERENCES "public"."service_accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "service_account_bindings" ADD CONSTRAINT "service_account_bindings_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "service_account_keys" ADD CONSTRAINT "service_account_keys_service_account_id_service_accounts_id_fk" FOREIGN KEY ("service_account_id") REFERENCES "public"."service_accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "oauth_access_tokens_expire_time_idx" ON "oauth_access_tokens" USING btree ("expire_time");--> statement-breakpoint
CREATE INDEX "oauth_access_tokens_key_idx" ON "oauth_access_tokens" USING btree ("key_id");--> statement-breakpoint
CREATE INDEX "oauth_access_tokens_account_idx" ON "oauth_access_tokens" USING btree ("service_account_id");--> statement-breakpoint
CREATE INDEX "oauth_used_assertions_expire_time_idx" ON "oauth_used_assertions" USING btree ("expire_time");--> statement-breakpoint
CREATE INDEX "service_account_bindings_project_idx" ON "service_account_bindings" USING btree ("project_id");--> statement-breakpoint
CREATE INDEX "service_account_keys_account_create_time_id_idx" ON "service_account_keys" USING btree ("service_account_id","create_time" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "service_accounts_create_time_id_idx" ON "service_accounts" USING btree ("create_time" DESC NULLS LAST,"id" DESC NULLS LAST);