CREATE TABLE "sip_capture_messages" (
	"call_id" text NOT NULL,
	"seq" integer NOT NULL,
	"sip_call_id" text NOT NULL,
	"time" timestamp (3) with time zone NOT NULL,
	"direction" text NOT NULL,
	"transport" text NOT NULL,
	"source_ip" text NOT NULL,
	"source_port" integer NOT NULL,
	"destination_ip" text NOT NULL,
	"destination_port" integer NOT NULL,
	"method" text NOT NULL,
	"start_line" text NOT NULL,
	"data" bytea NOT NULL,
	CONSTRAINT "sip_capture_messages_pk" PRIMARY KEY("call_id","seq"),
	CONSTRAINT "sip_capture_messages_direction_check" CHECK ("sip_capture_messages"."direction" in ('RECEIVED', 'SENT')),
	CONSTRAINT "sip_capture_messages_transport_check" CHECK ("sip_capture_messages"."transport" in ('UDP', 'TCP', 'TLS'))
);
--> statement-breakpoint
CREATE TABLE "sip_captures" (
	"call_id" text PRIMARY KEY NOT NULL,
	"sip_call_id" text NOT NULL,
	"omitted_messages" integer DEFAULT 0 NOT NULL,
	"omitted_bytes" bigint DEFAULT 0 NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "sip_captures_omitted_check" CHECK ("sip_captures"."omitted_messages" >= 0 and "sip_captures"."omitted_bytes" >= 0)
);
--> statement-breakpoint
ALTER TABLE "sip_capture_messages" ADD CONSTRAINT "sip_capture_messages_call_id_sip_captures_call_id_fk" FOREIGN KEY ("call_id") REFERENCES "public"."sip_captures"("call_id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sip_captures" ADD CONSTRAINT "sip_captures_call_id_calls_id_fk" FOREIGN KEY ("call_id") REFERENCES "public"."calls"("id") ON DELETE cascade ON UPDATE no action;