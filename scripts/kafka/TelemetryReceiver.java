// The test brokers' client telemetry receiver (KIP-714), compiled by scripts/kafka.sh against
// the broker's own jars and named in `metric.reporters`: every payload clients push, decoded
// with the OTLP classes kafka-clients ships, appended to the file `kwire.telemetry.file`, one
// line per data point:
//   <client instance id> <terminating> <client id> <metric name> <kind> <value>
// where kind is `gauge` or `sum:<temporality: 1 delta, 2 cumulative>:<monotonic>`.
// `ClientTelemetry` is what both 3.9 and 4.x brokers call (4.x deprecates it).

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetry;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.apache.kafka.server.telemetry.ClientTelemetryReceiver;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.Metric;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.MetricsData;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.NumberDataPoint;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.ResourceMetrics;
import org.apache.kafka.shaded.io.opentelemetry.proto.metrics.v1.ScopeMetrics;

@SuppressWarnings("deprecation")
public class TelemetryReceiver implements MetricsReporter, ClientTelemetry, ClientTelemetryReceiver {
    private Path file;

    @Override
    public void configure(Map<String, ?> configs) {
        Object f = configs.get("kwire.telemetry.file");
        file = f == null ? null : Paths.get(f.toString());
    }

    @Override
    public void init(List<KafkaMetric> metrics) {}

    @Override
    public void metricChange(KafkaMetric metric) {}

    @Override
    public void metricRemoval(KafkaMetric metric) {}

    @Override
    public void close() {}

    @Override
    public ClientTelemetryReceiver clientReceiver() {
        return this;
    }

    @Override
    public void exportMetrics(AuthorizableRequestContext context, ClientTelemetryPayload payload) {
        StringBuilder out = new StringBuilder();
        String who = payload.clientInstanceId() + " " + payload.isTerminating() + " " + context.clientId();
        try {
            MetricsData data = MetricsData.parseFrom(payload.data());
            for (ResourceMetrics rm : data.getResourceMetricsList()) {
                for (ScopeMetrics sm : rm.getScopeMetricsList()) {
                    for (Metric m : sm.getMetricsList()) {
                        List<NumberDataPoint> points;
                        String kind;
                        if (m.hasSum()) {
                            points = m.getSum().getDataPointsList();
                            kind = "sum:" + m.getSum().getAggregationTemporalityValue() + ":" + m.getSum().getIsMonotonic();
                        } else if (m.hasGauge()) {
                            points = m.getGauge().getDataPointsList();
                            kind = "gauge";
                        } else {
                            points = List.of();
                            kind = "other";
                        }
                        for (NumberDataPoint p : points) {
                            double v = p.getValueCase() == NumberDataPoint.ValueCase.AS_INT ? p.getAsInt() : p.getAsDouble();
                            out.append(who).append(' ').append(m.getName()).append(' ').append(kind).append(' ').append(v).append('\n');
                        }
                    }
                }
            }
        } catch (Exception e) {
            out.append(who).append(" ERROR ").append(e.toString().replace('\n', ' ')).append('\n');
        }
        if (file == null) {
            return;
        }
        synchronized (TelemetryReceiver.class) {
            try {
                Files.write(file, out.toString().getBytes(StandardCharsets.UTF_8), StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }
    }
}
