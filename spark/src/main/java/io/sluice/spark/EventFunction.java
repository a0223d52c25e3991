package io.sluice.spark;

import io.sluice.spark.variant.JsonWriter;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * {@code event(data VARIANT, zone STRING, extensions MAP<STRING, VARIANT>, datacontenttype,
 * dataschema, id, source, specversion, subject, time, type STRING) -> STRING}: a CloudEvent with
 * extensions as one JSON object, in one buffer: the text {@code json(to_variant_object(...))} of
 * its members gives (names sorted as a VARIANT object sorts them, NULL ones left out), without
 * building that VARIANT. An extension named like an attribute or {@code data} is left out (the
 * attribute's column holds it).
 */
public final class EventFunction extends SimpleFunction<UTF8String> {
  private static final long serialVersionUID = 1L;

  private static final String[] ATTRIBUTES = {
    "datacontenttype", "dataschema", "id", "source", "specversion", "subject", "time", "type"
  };

  private static final List<String> MEMBERS = memberNames();

  public EventFunction() {
    super("event", STRING, eventInputs());
  }

  private static List<String> memberNames() {
    List<String> names = new ArrayList<>(Arrays.asList(ATTRIBUTES));
    names.add("data");
    return names;
  }

  /** The inputs, the map's type left out (see {@link #inputTypes()}). */
  private static DataType[] eventInputs() {
    DataType[] types = new DataType[3 + ATTRIBUTES.length];
    types[0] = VARIANT;
    types[1] = STRING;
    Arrays.fill(types, 3, types.length, STRING);
    return types;
  }

  /** Made when Spark asks (MapType needs more of Spark than loading the catalog does). */
  @Override
  public DataType[] inputTypes() {
    DataType[] types = super.inputTypes();
    types[2] = DataTypes.createMapType(STRING, VARIANT);
    return types;
  }

  /** One member: its name and either a VARIANT value or a string. */
  private record Member(String name, VariantVal variant, UTF8String text) {}

  public static UTF8String invoke(
      VariantVal data,
      UTF8String zone,
      MapData extensions,
      UTF8String datacontenttype,
      UTF8String dataschema,
      UTF8String id,
      UTF8String source,
      UTF8String specversion,
      UTF8String subject,
      UTF8String time,
      UTF8String type) {
    UTF8String[] values = {
      datacontenttype, dataschema, id, source, specversion, subject, time, type
    };
    List<Member> members = new ArrayList<>(ATTRIBUTES.length + 4);
    int capacity = 256;
    for (int i = 0; i < ATTRIBUTES.length; i++) {
      if (values[i] != null) {
        members.add(new Member(ATTRIBUTES[i], null, values[i]));
      }
    }
    if (data != null) {
      members.add(new Member("data", data, null));
      capacity += data.getValue().length;
    }
    if (extensions != null) {
      ArrayData keys = extensions.keyArray();
      ArrayData vals = extensions.valueArray();
      for (int i = 0; i < extensions.numElements(); i++) {
        if (vals.isNullAt(i)) {
          continue;
        }
        String name = keys.getUTF8String(i).toString();
        if (MEMBERS.contains(name)) {
          continue;
        }
        VariantVal value = vals.getVariant(i);
        members.add(new Member(name, value, null));
        capacity += value.getValue().length + name.length() + 4;
      }
    }
    // A VARIANT object's fields are sorted by name (String order).
    members.sort((a, b) -> a.name().compareTo(b.name()));
    JsonWriter out = new JsonWriter(capacity);
    out.raw("{");
    boolean first = true;
    for (Member member : members) {
      if (!first) {
        out.raw(",");
      }
      first = false;
      byte[] name = UTF8String.fromString(member.name()).getBytes();
      out.string(name, 0, name.length);
      out.raw(":");
      if (member.text() != null) {
        byte[] bytes = member.text().getBytes();
        out.string(bytes, 0, bytes.length);
        continue;
      }
      VariantVal value = member.variant();
      int mark = out.size();
      if (!out.value(value.getValue(), value.getMetadata(), 0)) {
        // A value JSON has no literal for: as Spark writes it.
        out.truncate(mark);
        ZoneId zoneId = ZoneId.of(zone == null ? "UTC" : zone.toString());
        out.raw(UTF8String.fromString(value.toJson(zoneId)));
      }
    }
    out.raw("}");
    return out.result();
  }
}
