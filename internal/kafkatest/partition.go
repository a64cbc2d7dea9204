package kafkatest

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// partitionJava prints, for each key read from stdin (one per line, in
// hex, after a first line of partition counts), Kafka's murmur2 of the key
// and the partition the Java producer picks for it among each count: the
// client's own BuiltInPartitioner.partitionForKey.
const partitionJava = `import java.io.*;
import java.util.HexFormat;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.utils.Utils;

public class Partition {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String[] fields = in.readLine().trim().split(" ");
        int[] counts = new int[fields.length];
        for (int i = 0; i < fields.length; i++) counts[i] = Integer.parseInt(fields[i]);
        PrintWriter out = new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.out)));
        for (String line; (line = in.readLine()) != null; ) {
            byte[] key = HexFormat.of().parseHex(line.trim());
            StringBuilder b = new StringBuilder().append(Utils.murmur2(key));
            for (int n : counts) b.append(' ').append(BuiltInPartitioner.partitionForKey(key, n));
            out.println(b);
        }
        out.flush();
    }
}
`

// JavaPlacement is what Kafka's Java client says of one key.
type JavaPlacement struct {
	// Murmur2 is Utils.murmur2(key).
	Murmur2 int32
	// Partitions are BuiltInPartitioner.partitionForKey(key, n) for each
	// of the counts asked, in order.
	Partitions []int
}

// JavaPartitions asks Kafka's Java client (the jars of [Version], fetched
// as [Jars] does; java 17 or later on $PATH) where each of keys goes among
// each of counts partitions. A single-file Java program runs once for all
// the keys.
func JavaPartitions(ctx context.Context, keys [][]byte, counts []int) ([]JavaPlacement, error) {
	if _, err := exec.LookPath("java"); err != nil {
		return nil, errors.New("asking the Java client needs Java 17 or later: apt-get install openjdk-17-jdk-headless")
	}
	libs, err := Jars(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "cdc-relay-partition-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "Partition.java")
	if err := os.WriteFile(src, []byte(partitionJava), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "java", "-cp", filepath.Join(libs, "*"), src)
	cmd.Stdin = strings.NewReader(placementInput(keys, counts))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("java Partition.java: %w\n%s", err, stderr.String())
	}
	return parsePlacements(string(out), len(keys), len(counts))
}

// placementInput is the program's stdin: the counts, then each key in hex.
func placementInput(keys [][]byte, counts []int) string {
	var b strings.Builder
	for i, n := range counts {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(n))
	}
	b.WriteByte('\n')
	for _, k := range keys {
		b.WriteString(hex.EncodeToString(k))
		b.WriteByte('\n')
	}
	return b.String()
}

// parsePlacements reads the program's output: one line per key, its hash
// then a partition per count.
func parsePlacements(out string, keys, counts int) ([]JavaPlacement, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if keys == 0 {
		return nil, nil
	}
	if len(lines) != keys {
		return nil, fmt.Errorf("the Java program answered %d lines for %d keys", len(lines), keys)
	}
	res := make([]JavaPlacement, keys)
	for i, line := range lines {
		f := strings.Fields(line)
		if len(f) != counts+1 {
			return nil, fmt.Errorf("the Java program's line %d is %q: want a hash and %d partitions", i+1, line, counts)
		}
		h, err := strconv.ParseInt(f[0], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("the Java program's line %d: %w", i+1, err)
		}
		res[i].Murmur2 = int32(h)
		for _, s := range f[1:] {
			p, err := strconv.Atoi(s)
			if err != nil {
				return nil, fmt.Errorf("the Java program's line %d: %w", i+1, err)
			}
			res[i].Partitions = append(res[i].Partitions, p)
		}
	}
	return res, nil
}
