package io.sluice.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class TimeTextTest {

  private static long micros(String utc) {
    Instant instant = LocalDateTime.parse(utc).toInstant(ZoneOffset.UTC);
    return instant.getEpochSecond() * 1_000_000L + instant.getNano() / 1000;
  }

  @ParameterizedTest
  @CsvSource({
    "1970-01-01T00:00:00, 1970-01-01T00:00:00Z",
    "2024-06-01T08:15:30.120, 2024-06-01T08:15:30.120Z", // whole milliseconds: 3 digits
    "2024-06-01T08:15:30.000001, 2024-06-01T08:15:30.000001Z", // else 6
    "2024-06-01T08:15:30.123450, 2024-06-01T08:15:30.123450Z",
    "2024-02-29T23:59:59.999, 2024-02-29T23:59:59.999Z", // a leap day
    "1900-03-01T00:00:00, 1900-03-01T00:00:00Z", // 1900 is not a leap year
    "2000-02-29T12:00:00, 2000-02-29T12:00:00Z", // 2000 is
    "1969-12-31T23:59:59.999999, 1969-12-31T23:59:59.999999Z", // before the epoch
    "0001-01-01T00:00:00, 0001-01-01T00:00:00Z", // Spark's range, both ends
    "9999-12-31T23:59:59.999999, 9999-12-31T23:59:59.999999Z",
  })
  void rfc3339InUtc(String utc, String expected) {
    assertEquals(expected, TimeText.format(micros(utc)).toString());
    assertEquals(expected, TimeFunction.invoke(micros(utc)).toString());
  }

  @Test
  void agreesWithJavaTimeAcrossSparksRange() {
    DateTimeFormatter seconds = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss");
    long low = micros("0001-01-01T00:00:00");
    long high = micros("9999-12-31T23:59:59.999999");
    Random random = new Random(3339);
    for (int i = 0; i < 100_000; i++) {
      long micros = low + (long) (random.nextDouble() * (high - low));
      if (i % 3 == 0) {
        micros -= Math.floorMod(micros, 1000); // whole milliseconds
      } else if (i % 3 == 1) {
        micros -= Math.floorMod(micros, 1_000_000); // whole seconds
      }
      LocalDateTime time =
          LocalDateTime.ofEpochSecond(
              Math.floorDiv(micros, 1_000_000L),
              (int) Math.floorMod(micros, 1_000_000L) * 1000,
              ZoneOffset.UTC);
      int fraction = (int) Math.floorMod(micros, 1_000_000L);
      String expected =
          seconds.format(time)
              + (fraction == 0
                  ? ""
                  : fraction % 1000 == 0
                      ? String.format(".%03d", fraction / 1000)
                      : String.format(".%06d", fraction))
              + "Z";
      assertEquals(expected, TimeText.format(micros).toString(), Long.toString(micros));
    }
  }
}
