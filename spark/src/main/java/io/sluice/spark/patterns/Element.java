package io.sluice.spark.patterns;

import static io.sluice.spark.variant.VariantBytes.basicType;
import static io.sluice.spark.variant.VariantBytes.isLeaf;
import static io.sluice.spark.variant.VariantBytes.member;

import org.apache.spark.types.variant.VariantUtil;

/** Steps that hold inside one element ({@code _element_steps}). */
final class Element {
  /** Steps on the element itself: absence, or a leaf one of the matchers accepts. */
  private final boolean[] absent;

  private final AnyOf[] matchers;

  /** Steps on members, grouped by key. */
  private final byte[][] keys;

  private final Node[] children;

  Element(boolean[] absent, AnyOf[] matchers, byte[][] keys, Node[] children) {
    this.absent = absent;
    this.matchers = matchers;
    this.keys = keys;
    this.children = children;
  }

  boolean inSomeElement(byte[] v, byte[] m, int pos) {
    if (pos >= 0 && basicType(v, pos) == VariantUtil.ARRAY) {
      return inSomeCrushed(v, m, pos, EventPatterns.MAX_ARRAY_NESTING - 1);
    }
    return holdsIn(v, m, pos);
  }

  private boolean inSomeCrushed(byte[] v, byte[] m, int array, int depth) {
    int typeInfo = (v[array] & 0xFF) >> VariantUtil.BASIC_TYPE_BITS;
    int sizeBytes = ((typeInfo >> 2) & 0x1) != 0 ? VariantUtil.U32_SIZE : 1;
    int offsetSize = (typeInfo & 0x3) + 1;
    int count = VariantUtil.readUnsigned(v, array + 1, sizeBytes);
    int offsets = array + 1 + sizeBytes;
    int data = offsets + (count + 1) * offsetSize;
    for (int i = 0; i < count; i++) {
      int at = data + VariantUtil.readUnsigned(v, offsets + i * offsetSize, offsetSize);
      boolean found =
          depth > 0 && basicType(v, at) == VariantUtil.ARRAY
              ? inSomeCrushed(v, m, at, depth - 1)
              : holdsIn(v, m, at);
      if (found) {
        return true;
      }
    }
    return false;
  }

  private boolean holdsIn(byte[] v, byte[] m, int pos) {
    boolean leaf = isLeaf(v, pos);
    for (int i = 0; i < absent.length; i++) {
      boolean holds = leaf ? !absent[i] && matchers[i].test(v, pos) : absent[i];
      if (!holds) {
        return false;
      }
    }
    for (int i = 0; i < keys.length; i++) {
      if (!children[i].test(v, m, member(v, m, pos, keys[i]))) {
        return false;
      }
    }
    return true;
  }
}
