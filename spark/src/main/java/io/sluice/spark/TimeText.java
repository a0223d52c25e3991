package io.sluice.spark;

import java.nio.charset.StandardCharsets;
import java.time.ZoneOffset;
import org.apache.spark.sql.catalyst.util.TimestampFormatter;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A timestamp as RFC 3339 text in UTC, the form a CloudEvent's {@code time} takes, e.g. {@code
 * 2024-06-01T08:15:30.120Z}: what {@link TimeFunction} returns.
 *
 * <p>The text is the one {@code pipelines.cloudevents.time_text_sql} builds from built-in functions
 * (date and time from {@code date_format} of the UTC wall clock, then the fraction of a second only
 * when there is one: 3 digits for whole milliseconds, else 6), written directly: that SQL is a
 * dozen expressions which Spark optimizes again on every micro-batch. The calendar is the proleptic
 * Gregorian one Spark uses. Years 1 to 9999 (Spark's timestamp range) are written here; a timestamp
 * outside it has its date and time written by Spark's own formatter, as {@code date_format} writes
 * them.
 */
public final class TimeText {
  private static final long MICROS_PER_SECOND = 1_000_000L;
  private static final long SECONDS_PER_DAY = 86_400L;
  private static final String SECONDS_PATTERN = "yyyy-MM-dd'T'HH:mm:ss";

  /** Spark's formatter for years outside 1..9999, made on first use. */
  private static final class Fallback {
    static final TimestampFormatter FORMATTER =
        TimestampFormatter.apply(SECONDS_PATTERN, ZoneOffset.UTC, false);
  }

  private TimeText() {}

  /** The text of {@code micros} (microseconds since 1970-01-01T00:00:00Z). */
  public static UTF8String format(long micros) {
    long seconds = Math.floorDiv(micros, MICROS_PER_SECOND);
    int fraction = (int) Math.floorMod(micros, MICROS_PER_SECOND);
    long days = Math.floorDiv(seconds, SECONDS_PER_DAY);
    int secondOfDay = (int) Math.floorMod(seconds, SECONDS_PER_DAY);
    byte[] date = civilDate(days);
    if (date == null) {
      date =
          Fallback.FORMATTER.format(seconds * MICROS_PER_SECOND).getBytes(StandardCharsets.UTF_8);
    } else {
      date[10] = 'T';
      digits(date, 11, secondOfDay / 3600, 2);
      date[13] = ':';
      digits(date, 14, secondOfDay / 60 % 60, 2);
      date[16] = ':';
      digits(date, 17, secondOfDay % 60, 2);
    }
    int length = date.length;
    byte[] out = new byte[length + (fraction == 0 ? 1 : fraction % 1000 == 0 ? 5 : 8)];
    System.arraycopy(date, 0, out, 0, length);
    int end = length;
    if (fraction != 0) {
      out[end++] = '.';
      if (fraction % 1000 == 0) {
        digits(out, end, fraction / 1000, 3);
        end += 3;
      } else {
        digits(out, end, fraction, 6);
        end += 6;
      }
    }
    out[end] = 'Z';
    return UTF8String.fromBytes(out);
  }

  /**
   * A 19-byte buffer starting with {@code yyyy-MM-dd} of the day {@code days} after 1970-01-01
   * (proleptic Gregorian: Howard Hinnant's days-to-civil algorithm, in 400-year eras), or null when
   * its year is outside 1..9999.
   */
  private static byte[] civilDate(long days) {
    long z = days + 719_468;
    long era = Math.floorDiv(z, 146_097);
    long dayOfEra = z - era * 146_097;
    long yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365;
    long dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100);
    long shiftedMonth = (5 * dayOfYear + 2) / 153;
    int day = (int) (dayOfYear - (153 * shiftedMonth + 2) / 5 + 1);
    int month = (int) (shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9);
    long year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
    if (year < 1 || year > 9999) {
      return null;
    }
    byte[] out = new byte[19];
    digits(out, 0, (int) year, 4);
    out[4] = '-';
    digits(out, 5, month, 2);
    out[7] = '-';
    digits(out, 8, day, 2);
    return out;
  }

  /** Writes {@code value} as {@code width} decimal digits, zero-padded, at {@code at}. */
  private static void digits(byte[] out, int at, int value, int width) {
    for (int i = at + width - 1; i >= at; i--) {
      out[i] = (byte) ('0' + value % 10);
      value /= 10;
    }
  }
}
