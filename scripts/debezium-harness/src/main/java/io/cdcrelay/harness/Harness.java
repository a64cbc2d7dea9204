package io.cdcrelay.harness;

import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.IOException;
import java.io.PrintStream;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.ConverterConfig;
import org.apache.kafka.connect.storage.ConverterType;
import org.apache.kafka.connect.storage.HeaderConverter;
import org.apache.kafka.connect.util.ConnectUtils;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;

import io.debezium.embedded.Connect;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.ChangeEvent;

/**
 * Runs Debezium's PostgreSQL connector, with the SMTs its configuration names
 * (the outbox event router), in Debezium's embedded engine, and prints each
 * record it yields as one JSON line on stdout, its key, value and headers
 * serialised by the converters the configuration names exactly as a Kafka
 * Connect worker serialises a source record before it produces it
 * (AbstractWorkerSourceTask#convertTransformedRecord: the header converter
 * first, then key and value converters with the record's topic and those
 * headers, the timestamp through ConnectUtils#checkAndConvertTimestamp).
 *
 * <p>Usage: {@code Harness --config FILE [--config FILE ...] [--max N] [--timeout SECONDS] [--otel-propagation] [key=value ...]}
 *
 * <p>{@code --otel-propagation} sets OpenTelemetry's global instance to W3C
 * trace context propagation without an SDK: the router's tracing spans are
 * then the API's propagating no-op spans, so the traceparent and tracestate
 * it writes are those of the row's tracing column (with an SDK, as under
 * OpenTelemetry's Java agent, the span id would be its own span's).
 *
 * <p>Exit codes: 0 when N records were printed, or when SIGTERM stopped it
 * (the engine closed as Kafka Connect stops a task: the offsets of the
 * records printed committed, their position confirmed on the slot), 3 on
 * timeout (the records received so far are printed), 1 when the engine
 * failed, 2 on bad arguments. Only printed records are marked processed.
 */
public final class Harness {

    private static final String KEY_CONVERTER = "key.converter";
    private static final String VALUE_CONVERTER = "value.converter";
    private static final String HEADER_CONVERTER = "header.converter";
    /** The Connect worker's default header.converter. */
    private static final String DEFAULT_HEADER_CONVERTER = "org.apache.kafka.connect.storage.SimpleHeaderConverter";

    public static void main(String[] args) throws Exception {
        // stdout carries the records alone: anything a library prints goes to stderr.
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            String level = System.getenv("HARNESS_LOG_LEVEL");
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", level == null || level.isEmpty() ? "warn" : level);
        }
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");

        List<String> configFiles = new ArrayList<>();
        long max = 1;
        long timeoutSeconds = 60;
        Map<String, String> overrides = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            try {
                switch (a) {
                    case "--config" -> configFiles.add(args[++i]);
                    case "--max" -> max = Long.parseLong(args[++i]);
                    case "--timeout" -> timeoutSeconds = Long.parseLong(args[++i]);
                    case "--otel-propagation" -> GlobalOpenTelemetry.set(
                            OpenTelemetry.propagating(ContextPropagators.create(W3CTraceContextPropagator.getInstance())));
                    default -> {
                        int eq = a.indexOf('=');
                        if (eq <= 0) {
                            usage("unknown argument " + a);
                        }
                        overrides.put(a.substring(0, eq), a.substring(eq + 1));
                    }
                }
            }
            catch (ArrayIndexOutOfBoundsException | NumberFormatException e) {
                usage("bad argument " + a);
            }
        }
        if (configFiles.isEmpty()) {
            usage("--config is required");
        }

        // Each file in turn, a later one overriding an earlier one's settings.
        Properties all = new Properties();
        for (String configFile : configFiles) {
            try (Reader r = Files.newBufferedReader(Path.of(configFile), StandardCharsets.UTF_8)) {
                all.load(r);
            }
        }
        overrides.forEach(all::setProperty);

        // The converters' settings stay with the harness, as with a worker;
        // everything else configures the engine, the connector and its SMTs.
        Map<String, Object> keyConf = new HashMap<>();
        Map<String, Object> valueConf = new HashMap<>();
        Map<String, Object> headerConf = new HashMap<>();
        Properties engine = new Properties();
        for (String name : all.stringPropertyNames()) {
            String v = all.getProperty(name);
            if (name.startsWith(KEY_CONVERTER + ".")) {
                keyConf.put(name.substring(KEY_CONVERTER.length() + 1), v);
            }
            else if (name.startsWith(VALUE_CONVERTER + ".")) {
                valueConf.put(name.substring(VALUE_CONVERTER.length() + 1), v);
            }
            else if (name.startsWith(HEADER_CONVERTER + ".")) {
                headerConf.put(name.substring(HEADER_CONVERTER.length() + 1), v);
            }
            else if (!name.equals(KEY_CONVERTER) && !name.equals(VALUE_CONVERTER) && !name.equals(HEADER_CONVERTER)) {
                engine.setProperty(name, v);
            }
        }
        String keyClass = all.getProperty(KEY_CONVERTER);
        String valueClass = all.getProperty(VALUE_CONVERTER);
        String headerClass = all.getProperty(HEADER_CONVERTER, DEFAULT_HEADER_CONVERTER);
        if (keyClass == null || valueClass == null) {
            usage("the config must name key.converter and value.converter");
        }

        // As Plugins#newConverter and #newHeaderConverter configure them.
        Converter keyConverter = (Converter) newInstance(keyClass);
        keyConf.put(ConverterConfig.TYPE_CONFIG, ConverterType.KEY.getName());
        keyConverter.configure(keyConf, true);
        Converter valueConverter = (Converter) newInstance(valueClass);
        valueConf.put(ConverterConfig.TYPE_CONFIG, ConverterType.VALUE.getName());
        valueConverter.configure(valueConf, false);
        HeaderConverter headerConverter = (HeaderConverter) newInstance(headerClass);
        headerConf.put(ConverterConfig.TYPE_CONFIG, ConverterType.HEADER.getName());
        headerConverter.configure(headerConf);

        setDefault(engine, "name", "cdc-relay-debezium-harness");
        setDefault(engine, "connector.class", "io.debezium.connector.postgresql.PostgresConnector");
        setDefault(engine, "offset.storage", "org.apache.kafka.connect.storage.MemoryOffsetBackingStore");
        setDefault(engine, "offset.flush.interval.ms", "0");

        ObjectMapper json = new ObjectMapper();
        long limit = max;
        CountDownLatch enough = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch stopped = new CountDownLatch(1);
        long[] printed = {0};

        DebeziumEngine.ChangeConsumer<ChangeEvent<SourceRecord, SourceRecord>> consumer = (records, committer) -> {
            for (ChangeEvent<SourceRecord, SourceRecord> event : records) {
                // A record is marked processed (its offset committed, its
                // position confirmed on the slot) only once it is printed,
                // as a worker commits only what Kafka acknowledged: what is
                // not printed (past --max, or while stopping) is read again
                // by the slot's next reader.
                synchronized (printed) {
                    if (printed[0] >= limit) {
                        break;
                    }
                    String text;
                    try {
                        text = json.writeValueAsString(line(json, event.value(), keyConverter, valueConverter, headerConverter));
                    }
                    catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                    out.println(text);
                    out.flush();
                    printed[0]++;
                    if (printed[0] >= limit) {
                        enough.countDown();
                    }
                    committer.markProcessed(event);
                }
            }
            committer.markBatchFinished();
        };

        DebeziumEngine<ChangeEvent<SourceRecord, SourceRecord>> dbz = DebeziumEngine.create(Connect.class)
                .using(engine)
                .notifying(consumer)
                .using((success, message, error) -> {
                    if (!success) {
                        failure.set(error != null ? error : new RuntimeException(message));
                        System.err.println("harness: the engine stopped: " + message);
                        enough.countDown();
                    }
                    stopped.countDown();
                    enough.countDown();
                })
                .build();

        // SIGTERM (or SIGINT) stops the engine as Kafka Connect stops a
        // task (DELETE /connectors/NAME): the main thread below closes it,
        // which commits the offsets of the records printed and confirms
        // their position on the slot, and the JVM then exits 0 (1 if the
        // engine had failed). The hook waits for that, at most 60 s.
        AtomicBoolean terminated = new AtomicBoolean();
        CountDownLatch closed = new CountDownLatch(1);
        int[] exit = {1}; // until main has closed the engine and set it
        Thread onSignal = new Thread(() -> {
            terminated.set(true);
            enough.countDown();
            try {
                if (!closed.await(60, TimeUnit.SECONDS)) {
                    System.err.println("harness: the engine did not close within 60 s of the signal");
                }
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            out.flush();
            Runtime.getRuntime().halt(exit[0]);
        }, "harness-stop");
        Runtime.getRuntime().addShutdownHook(onSignal);

        ExecutorService executor = Executors.newSingleThreadExecutor();
        executor.execute(dbz);
        boolean done = enough.await(timeoutSeconds, TimeUnit.SECONDS);
        long count;
        synchronized (printed) {
            count = printed[0];
            printed[0] = Long.MAX_VALUE; // print nothing more while closing
        }
        try {
            dbz.close();
        }
        catch (IOException | RuntimeException e) {
            System.err.println("harness: closing the engine: " + e);
        }
        stopped.await(30, TimeUnit.SECONDS);
        executor.shutdownNow();
        out.flush();

        int code;
        if (failure.get() != null && count < limit) {
            failure.get().printStackTrace(System.err);
            code = 1;
        }
        else if (terminated.get()) {
            System.err.println("harness: stopped on a signal with " + count + " records");
            code = 0;
        }
        else if (!done || count < limit) {
            System.err.println("harness: timed out after " + timeoutSeconds + " s with " + count + " of " + limit + " records");
            code = 3;
        }
        else {
            code = 0;
        }
        exit[0] = code;
        closed.countDown();
        // On a signal the JVM is shutting down already: the hook exits with
        // the code. Otherwise System.exit runs the hook too, which finds
        // the engine closed and exits with the same code.
        if (!terminated.get()) {
            System.exit(code);
        }
    }

    /** One record as the worker would produce it, as a JSON object. */
    static ObjectNode line(ObjectMapper json, SourceRecord record, Converter keyConverter, Converter valueConverter,
                           HeaderConverter headerConverter) {
        String topic = record.topic();
        // AbstractWorkerSourceTask#convertHeaderFor
        RecordHeaders headers = new RecordHeaders();
        if (record.headers() != null) {
            for (Header h : record.headers()) {
                headers.add(h.key(), headerConverter.fromConnectHeader(topic, h.key(), h.schema(), h.value()));
            }
        }
        byte[] key = keyConverter.fromConnectData(topic, headers, record.keySchema(), record.key());
        byte[] value = valueConverter.fromConnectData(topic, headers, record.valueSchema(), record.value());
        Long timestamp = ConnectUtils.checkAndConvertTimestamp(record.timestamp());

        ObjectNode o = json.createObjectNode();
        o.put("topic", topic);
        if (record.kafkaPartition() == null) {
            o.putNull("partition");
        }
        else {
            o.put("partition", record.kafkaPartition());
        }
        putBytes(o, "key", key);
        putBytes(o, "value", value);
        ArrayNode hs = o.putArray("headers");
        for (org.apache.kafka.common.header.Header h : headers) {
            ObjectNode ho = hs.addObject();
            ho.put("key", h.key());
            putBytes(ho, "value", h.value());
        }
        if (timestamp == null) {
            o.putNull("timestamp");
        }
        else {
            o.put("timestamp", timestamp);
        }
        return o;
    }

    private static void putBytes(ObjectNode o, String field, byte[] b) {
        if (b == null) {
            o.putNull(field);
        }
        else {
            o.put(field, Base64.getEncoder().encodeToString(b));
        }
    }

    private static Object newInstance(String className) throws ReflectiveOperationException {
        return Class.forName(className).getDeclaredConstructor().newInstance();
    }

    private static void setDefault(Properties p, String name, String value) {
        if (p.getProperty(name) == null) {
            p.setProperty(name, value);
        }
    }

    private static void usage(String why) {
        System.err.println("harness: " + why);
        System.err.println("usage: Harness --config FILE [--config FILE ...] [--max N] [--timeout SECONDS] [key=value ...]");
        System.exit(2);
    }
}
