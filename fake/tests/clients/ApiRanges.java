// The api versions a Kafka release's brokers advertise, from that release's kafka-clients jar
// (its ApiKeys): one line "KEY LO HI" per api a broker listener takes, the newest version left
// out when it is unstable (a broker with unstable.api.versions.enable off), as the broker's
// ApiVersions answer lists them. 2.8 brokers run on ZooKeeper (ZK_BROKER); 4.x's on KRaft
// (BROKER).
//
//   java -cp kafka-clients.jar ApiRanges.java ZK_BROKER|BROKER

import java.lang.reflect.Method;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ApiKeys;

public class ApiRanges {
    public static void main(String[] args) throws Exception {
        ApiMessageType.ListenerType listener = ApiMessageType.ListenerType.valueOf(args[0]);
        Method stable = null;
        try {
            stable = ApiKeys.class.getMethod("latestVersion", boolean.class);
        } catch (NoSuchMethodException e) {
            // Before unstable versions existed (2.8): the latest is advertised.
        }
        for (ApiKeys k : ApiKeys.apisForListener(listener)) {
            short lo = k.oldestVersion();
            short hi = stable != null ? (short) stable.invoke(k, false) : k.latestVersion();
            if (hi >= lo) System.out.println(k.id + " " + lo + " " + hi);
        }
    }
}
