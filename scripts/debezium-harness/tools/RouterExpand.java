import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;

import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaBuilder;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.source.SourceRecord;

import io.debezium.data.Envelope;
import io.debezium.transforms.outbox.EventRouter;

/**
 * Runs Debezium's outbox event router with table.expand.json.payload=true,
 * and Kafka Connect's JsonConverter after it, on payloads given one a line,
 * and prints the value bytes each writes: the expected bytes of the relay's
 * expand_json_payload (decoder/testdata/expand-json-payload.jsonl, which
 * scripts/debezium-harness/tools/expand-golden.sh rewrites with it).
 *
 * <p>Each input line is a JSON object: {@code payload} (the payload
 * column's text, null for NULL) or {@code repeat} ({@code [[text, count],
 * ...]}: the payload is each text count times, in turn);
 * {@code column} (jsonb, json or text: the column's type, which gives the
 * payload's Connect schema, as Debezium's PostgreSQL connector does);
 * {@code null} and {@code emptyArray} (table.json.payload.null.behavior and
 * table.json.payload.empty.array.behavior); {@code envelope} (true: the
 * type column placed in the envelope, table.fields.additional.placement=
 * type:envelope:eventType); {@code digest} (true: print the SHA-256 of
 * each value and its length rather than the value). The line comes back
 * with {@code off} and {@code on}: the value's bytes (as text) that
 * JsonConverter writes with schemas.enable=false and true, or
 * {@code offError}, {@code onError}, or {@code routerError} when the
 * converter or the router throws (the Connect task then fails).
 *
 * <p>With {@code --only empty-array} it answers only the lines that set
 * {@code emptyArray} (passing the others on as they are), with
 * {@code --skip empty-array} only the others: Debezium 3.6 has no
 * table.json.payload.empty.array.behavior (3.7 added it), so those lines
 * are answered by a router built from 3.7's outbox package. With
 * {@code --only java19} it answers only the lines that set {@code java19}
 * (true), into {@code offJava19} and {@code onJava19}: run on Java 19 or
 * later, whose Double.toString writes the shortest digits (JDK-4511638),
 * where Java 17's sometimes writes more.
 */
public final class RouterExpand {

    public static void main(String[] args) throws Exception {
        String only = null;
        String skip = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--only" -> only = args[++i];
                case "--skip" -> skip = args[++i];
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        ObjectMapper json = new ObjectMapper();
        json.getFactory().setStreamReadConstraints(StreamReadConstraints.builder().maxStringLength(Integer.MAX_VALUE).build());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        for (String line; (line = in.readLine()) != null;) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode c = (ObjectNode) json.readTree(line);
            boolean emptyArray = c.has("emptyArray");
            boolean java19 = "java19".equals(only);
            if ("empty-array".equals(only) && !emptyArray || "empty-array".equals(skip) && emptyArray
                    || java19 && !c.path("java19").asBoolean(false)) {
                out.println(line);
                continue;
            }
            if (java19 && Runtime.version().feature() < 19) {
                throw new IllegalStateException("--only java19 needs Java 19 or later, this is " + Runtime.version());
            }
            String suffix = java19 ? "Java19" : "";
            for (String k : new String[]{ "off", "on", "offError", "onError", "routerError" }) {
                c.remove(k + suffix);
            }
            answer(c, suffix);
            out.println(json.writeValueAsString(c));
        }
    }

    /** Runs the router and the converters on c's payload, and puts what they wrote into c. */
    static void answer(ObjectNode c, String suffix) throws Exception {
        Map<String, String> cfg = new HashMap<>();
        cfg.put("table.expand.json.payload", "true");
        if (c.has("null")) {
            cfg.put("table.json.payload.null.behavior", c.get("null").asText());
        }
        if (c.has("emptyArray")) {
            cfg.put("table.json.payload.empty.array.behavior", c.get("emptyArray").asText());
        }
        boolean envelope = c.path("envelope").asBoolean(false);
        cfg.put("table.fields.additional.placement", envelope ? "type:envelope:eventType" : "type:header:eventType");
        EventRouter<SourceRecord> router = new EventRouter<>();
        router.configure(cfg);

        // The row as Debezium's PostgreSQL connector gives it: a json or
        // jsonb payload is an optional string named io.debezium.data.Json.
        String column = c.path("column").asText("jsonb");
        SchemaBuilder payloadSchema = SchemaBuilder.string().optional();
        if (!column.equals("text")) {
            payloadSchema = payloadSchema.name("io.debezium.data.Json").version(1);
        }
        Schema row = SchemaBuilder.struct().name("harness.public.outbox.Value")
                .field("id", SchemaBuilder.string().name("io.debezium.data.Uuid").version(1).build())
                .field("aggregatetype", Schema.STRING_SCHEMA)
                .field("aggregateid", Schema.STRING_SCHEMA)
                .field("type", Schema.STRING_SCHEMA)
                .field("payload", payloadSchema.build())
                .build();
        Envelope env = Envelope.defineSchema().withName("harness.public.outbox.Envelope")
                .withRecord(row).withSource(SchemaBuilder.struct().build()).build();
        Struct after = new Struct(row)
                .put("id", "00000000-0000-4000-8000-000000000001")
                .put("aggregatetype", "order")
                .put("aggregateid", "1")
                .put("type", "OrderCreated")
                .put("payload", payload(c));
        SourceRecord record = new SourceRecord(new HashMap<>(), new HashMap<>(), "harness.public.outbox",
                env.schema(), env.create(after, null, Instant.now()));

        SourceRecord routed;
        try {
            routed = router.apply(record);
        }
        catch (RuntimeException e) {
            c.put("routerError" + suffix, e.toString());
            return;
        }
        boolean digest = c.path("digest").asBoolean(false);
        for (boolean schemas : new boolean[]{ false, true }) {
            String base = schemas ? "on" : "off";
            String k = base + suffix;
            JsonConverter converter = new JsonConverter();
            converter.configure(Map.of("schemas.enable", String.valueOf(schemas)), false);
            byte[] b;
            try {
                b = converter.fromConnectData(routed.topic(), routed.valueSchema(), routed.value());
            }
            catch (RuntimeException e) {
                c.put(base + "Error" + suffix, e.toString());
                continue;
            }
            if (b == null) {
                c.putNull(k);
            }
            else if (digest) {
                c.put(k, "sha256:" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b)) + " len:" + b.length);
            }
            else {
                c.put(k, new String(b, StandardCharsets.UTF_8));
            }
        }
    }

    /** The payload column's text that c gives, null for NULL. */
    static String payload(ObjectNode c) {
        JsonNode r = c.get("repeat");
        if (r != null) {
            StringBuilder b = new StringBuilder();
            for (JsonNode part : r) {
                b.append(part.get(0).asText().repeat(part.get(1).asInt()));
            }
            return b.toString();
        }
        JsonNode p = c.get("payload");
        return p == null || p.isNull() ? null : p.asText();
    }
}
