package io.sluice.spark.variant;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * A check of a JSON object document that reads its bytes once, without building anything, and finds
 * where its top-level members are: what {@code parse_pruned} needs to parse only the members a
 * filter reads. It covers the documents most events are (ASCII, no escapes, objects nested a few
 * levels, short numbers and names) and gives up on the rest ({@link #UNSURE}), which Jackson then
 * reads: its answer must be Jackson's (with Spark's parser settings) on every document it decides,
 * so it decides only where the JSON grammar (RFC 8259) is all there is to it:
 *
 * <ul>
 *   <li>the root value is an object (a root scalar has Jackson's own rules about what follows it);
 *   <li>every byte is ASCII and there is no backslash (no escapes, no UTF-8 to validate: the caller
 *       checks this first);
 *   <li>at most {@value #MAX_DEPTH} levels of nesting, numbers of at most {@value #MAX_NUMBER}
 *       characters and names of at most {@value #MAX_NAME} (well inside Jackson's limits).
 * </ul>
 *
 * What follows the root object is not read, as Spark's parser does not read it.
 */
public final class JsonScan {
  /** The document is not valid JSON (or repeats a member name where that is refused). */
  public static final int[] INVALID = new int[0];

  /** Not decided here: outside what this check covers. */
  public static final int[] UNSURE = null;

  private static final VarHandle LONGS =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final long ONES = 0x0101010101010101L;
  private static final long HIGHS = 0x8080808080808080L;
  private static final long QUOTES = ONES * '"';
  private static final long SPACES = ONES * 0x20;

  static final int MAX_DEPTH = 64;
  static final int MAX_NUMBER = 64;
  static final int MAX_NAME = 256;
  private static final int MAX_MEMBERS = 256;

  private final byte[] b;
  private final int n;
  private final boolean refuseDuplicates;
  private int pos;
  private boolean unsure;

  /** Top-level members: for each, the name's opening quote and the value's end (exclusive). */
  private int[] members = new int[16];

  private int memberCount;

  private JsonScan(byte[] bytes, boolean refuseDuplicates) {
    this.b = bytes;
    this.n = bytes.length;
    this.refuseDuplicates = refuseDuplicates;
  }

  /**
   * {@link #INVALID}, {@link #UNSURE}, or the top-level members of a valid object document as pairs
   * {@code [start, end)}: from a member's opening name quote to the end of its value, in order.
   * {@code refuseDuplicates}: a name repeated in any object makes the document invalid.
   */
  public static int[] topMembers(byte[] bytes, boolean refuseDuplicates) {
    JsonScan scan = new JsonScan(bytes, refuseDuplicates);
    scan.skipSpace();
    if (scan.pos >= scan.n || bytes[scan.pos] != '{') {
      return UNSURE;
    }
    boolean valid = scan.object(1);
    if (scan.unsure) {
      return UNSURE;
    }
    return valid ? Arrays.copyOf(scan.members, scan.memberCount * 2) : INVALID;
  }

  /** The name of the member at {@code start} (its opening quote) equals {@code name}. */
  public static boolean nameIs(byte[] bytes, int start, byte[] name) {
    int from = start + 1;
    return from + name.length < bytes.length
        && bytes[from + name.length] == '"'
        && Arrays.equals(bytes, from, from + name.length, name, 0, name.length);
  }

  private boolean giveUp() {
    unsure = true;
    return false;
  }

  private void skipSpace() {
    while (pos < n) {
      byte c = b[pos];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
        return;
      }
      pos++;
    }
  }

  private static final int EMPTY = 0;
  private static final int HAS_CONTENT = 1;
  private static final int TOO_DEEP = 2;

  /**
   * Steps into the container at {@code pos}, {@code depth} levels deep: {@link #EMPTY} (and past
   * its {@code close}), {@link #HAS_CONTENT} (at its first member or element) or {@link #TOO_DEEP}
   * (given up).
   */
  private int open(int depth, char close) {
    if (depth > MAX_DEPTH) {
      giveUp();
      return TOO_DEEP;
    }
    pos++; // '{' or '['
    skipSpace();
    if (pos < n && b[pos] == close) {
      pos++;
      return EMPTY;
    }
    return HAS_CONTENT;
  }

  /** An object at {@code pos} ('{'), {@code depth} levels deep; false: invalid or unsure. */
  private boolean object(int depth) {
    int opened = open(depth, '}');
    if (opened != HAS_CONTENT) {
      return opened == EMPTY;
    }
    int[] names = refuseDuplicates ? new int[8] : null; // name starts and ends, for repeats
    int count = 0;
    while (true) {
      if (pos >= n || b[pos] != '"') {
        return false;
      }
      int nameStart = pos;
      if (!string()) {
        return false;
      }
      int nameEnd = pos;
      if (nameEnd - nameStart - 2 > MAX_NAME || count >= MAX_MEMBERS) {
        return giveUp();
      }
      if (names != null) {
        for (int i = 0; i < count; i++) {
          if (Arrays.equals(b, names[2 * i], names[2 * i + 1], b, nameStart, nameEnd)) {
            return false; // a repeated name
          }
        }
        if (2 * count + 2 > names.length) {
          names = Arrays.copyOf(names, names.length * 2);
        }
        names[2 * count] = nameStart;
        names[2 * count + 1] = nameEnd;
      }
      count++;
      skipSpace();
      if (pos >= n || b[pos] != ':') {
        return false;
      }
      pos++;
      skipSpace();
      if (!value(depth)) {
        return false;
      }
      if (depth == 1) {
        addMember(nameStart, pos);
      }
      int after = after('}');
      if (after != MORE) {
        return after == CLOSED;
      }
    }
  }

  private static final int CLOSED = 0;
  private static final int MORE = 1;
  private static final int BROKEN = 2;

  /**
   * What follows a member or an element: the container's {@code close} ({@link #CLOSED}, past it),
   * a comma ({@link #MORE}, at the next one) or anything else ({@link #BROKEN}: invalid).
   */
  private int after(char close) {
    skipSpace();
    if (pos >= n || (b[pos] != close && b[pos] != ',')) {
      return BROKEN;
    }
    pos++;
    if (b[pos - 1] == close) {
      return CLOSED;
    }
    skipSpace();
    return MORE;
  }

  private void addMember(int start, int end) {
    if (2 * memberCount + 2 > members.length) {
      members = Arrays.copyOf(members, members.length * 2);
    }
    members[2 * memberCount] = start;
    members[2 * memberCount + 1] = end;
    memberCount++;
  }

  private boolean array(int depth) {
    int opened = open(depth, ']');
    if (opened != HAS_CONTENT) {
      return opened == EMPTY;
    }
    while (true) {
      if (!value(depth)) {
        return false;
      }
      int after = after(']');
      if (after != MORE) {
        return after == CLOSED;
      }
    }
  }

  /** A value at {@code pos} inside a container {@code depth} levels deep. */
  private boolean value(int depth) {
    if (pos >= n) {
      return false;
    }
    switch (b[pos]) {
      case '{':
        return object(depth + 1);
      case '[':
        return array(depth + 1);
      case '"':
        return string();
      case 't':
        return literal("true");
      case 'f':
        return literal("false");
      case 'n':
        return literal("null");
      default:
        return number();
    }
  }

  /** A string at {@code pos} ('"'): no control character before its closing quote. */
  private boolean string() {
    int i = pos + 1;
    while (i + Long.BYTES <= n) { // eight bytes at a time up to the first that may end it
      long word = (long) LONGS.get(b, i);
      long quotes = word ^ QUOTES;
      if (((((quotes - ONES) & ~quotes) | (word - SPACES)) & HIGHS) != 0) {
        break; // a quote or a control character among them (ASCII: no high bit is set)
      }
      i += Long.BYTES;
    }
    while (i < n) {
      byte c = b[i];
      if (c == '"') {
        pos = i + 1;
        return true;
      }
      if (c < 0x20) {
        return false; // a control character (bytes above 0x7F are not here: the caller checks)
      }
      i++;
    }
    return false;
  }

  /**
   * A literal, then no letter, digit, '_' or '$' (Jackson refuses {@code truex} as one token; any
   * other character ends it and is read by the container).
   */
  private boolean literal(String word) {
    int end = pos + word.length();
    if (end > n) {
      return false;
    }
    for (int i = 0; i < word.length(); i++) {
      if (b[pos + i] != word.charAt(i)) {
        return false;
      }
    }
    if (end < n && identifierPart(b[end])) {
      return false;
    }
    pos = end;
    return true;
  }

  private static boolean identifierPart(byte c) {
    return (c >= 'a' && c <= 'z')
        || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9')
        || c == '_'
        || c == '$';
  }

  /** {@code -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?}, at most {@value #MAX_NUMBER}. */
  private boolean number() {
    int start = pos;
    int i = pos;
    if (i < n && b[i] == '-') {
      i++;
    }
    if (i >= n || !digit(b[i])) {
      return false;
    }
    if (b[i] == '0') {
      i++;
      if (i < n && digit(b[i])) {
        return false; // a leading zero
      }
    } else {
      while (i < n && digit(b[i])) {
        i++;
      }
    }
    if (i < n && b[i] == '.') {
      i++;
      if (i >= n || !digit(b[i])) {
        return false;
      }
      while (i < n && digit(b[i])) {
        i++;
      }
    }
    if (i < n && (b[i] == 'e' || b[i] == 'E')) {
      i++;
      if (i < n && (b[i] == '+' || b[i] == '-')) {
        i++;
      }
      if (i >= n || !digit(b[i])) {
        return false;
      }
      while (i < n && digit(b[i])) {
        i++;
      }
    }
    if (i - start > MAX_NUMBER) {
      return giveUp();
    }
    pos = i;
    return true;
  }

  private static boolean digit(byte c) {
    return c >= '0' && c <= '9';
  }
}
