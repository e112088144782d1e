// Java's kafka-clients against kwire-fake over SASL_PLAINTEXT with OAUTHBEARER: the unsecured
// login module makes the tokens (sub as given, alg "none"), the fake validates them as Kafka's
// default validator does. Admin, a producer and a consumer authenticate as the token's subject;
// a token without a sub claim is refused with invalid_token. Prints a line per check and "OK" at
// the end.
//
//   java -cp 'kafka-clients lib/*' JavaOAuth.java BOOTSTRAP

import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaOAuth {
    static Properties sasl(String bootstrap, String clientId, String sub) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", clientId);
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", "OAUTHBEARER");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\"" + sub + "\";");
        return p;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        try (Admin admin = Admin.create(sasl(bootstrap, "java-oauth-admin", "alice"))) {
            admin.createTopics(List.of(new NewTopic("java-oauth", 1, (short) 1))).all().get();
            System.out.println("admin: topic created as alice");
        }
        Properties p = sasl(bootstrap, "java-oauth-producer", "alice");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < 100; i++) producer.send(new ProducerRecord<>("java-oauth", "k" + i, "v" + i)).get();
            System.out.println("producer: 100 records acknowledged");
        }
        Properties c = sasl(bootstrap, "java-oauth-consumer", "bob");
        c.put("group.id", "java-oauth-group");
        c.put("auto.offset.reset", "earliest");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        int read = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.subscribe(List.of("java-oauth"));
            long deadline = System.currentTimeMillis() + 60_000;
            while (read < 100 && System.currentTimeMillis() < deadline) read += consumer.poll(Duration.ofMillis(500)).count();
        }
        if (read != 100) throw new AssertionError("consumer read " + read + " of 100");
        System.out.println("consumer: 100 records read as bob");

        // A token naming its principal in another claim has no sub: Kafka's validator refuses it.
        Properties nosub = sasl(bootstrap, "java-oauth-refused", "x");
        nosub.put("sasl.jaas.config", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginPrincipalClaimName=\"user\" unsecuredLoginStringClaim_user=\"dave\";");
        nosub.put("default.api.timeout.ms", "10000");
        nosub.put("request.timeout.ms", "5000");
        try (Admin admin = Admin.create(nosub)) {
            admin.listTopics().names().get();
            throw new AssertionError("a token without sub was accepted");
        } catch (java.util.concurrent.ExecutionException e) {
            if (!(e.getCause() instanceof SaslAuthenticationException)) throw e;
            String m = e.getCause().getMessage();
            if (!m.contains("invalid_token")) throw new AssertionError("refused without invalid_token: " + m);
            System.out.println("refused: " + m);
        }
        System.out.println("OK");
    }
}
