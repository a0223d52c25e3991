/** Sample events for the pattern test bench, in CloudEvents JSON form (payload under data). */

export interface SampleEvent {
  label: string;
  event: Record<string, unknown>;
}

export const BUILT_IN_SAMPLES: SampleEvent[] = [
  {
    label: "Order (the demo generator's)",
    event: {
      specversion: "1.0",
      id: "generator/1",
      source: "sluice://generator",
      type: "sluice.demo.order",
      data: { order_id: 1, region: "eu-west", amount: 120.5, currency: "EUR" },
    },
  },
  {
    label: "EC2 instance state change (EventBridge)",
    event: {
      specversion: "1.0",
      id: "7bf73129-1428-4cd3-a780-95db273d1602",
      source: "aws.ec2",
      type: "EC2 Instance State-change Notification",
      time: "2026-11-21T12:00:00Z",
      subject: "arn:aws:ec2:eu-west-1:123456789012:instance/i-1234567890abcdef0",
      data: { "instance-id": "i-1234567890abcdef0", state: "terminated" },
    },
  },
  {
    label: "CloudEvent with extensions (storage object created)",
    event: {
      specversion: "1.0",
      id: "A234-1234-1234",
      source: "https://example.com/storage/tenant/container",
      type: "com.example.object.created.v1",
      subject: "mynewfile.jpg",
      time: "2026-11-21T17:31:00Z",
      datacontenttype: "application/json",
      tenant: "acme",
      data: { size: 2048, contentType: "image/jpeg", tags: ["holiday", "beach"] },
    },
  },
];

/** Label the newest preview events of a channel by their id, newest first. */
export function tailSamples(events: Record<string, unknown>[], limit = 5): SampleEvent[] {
  return events.slice(0, limit).map((event, index) => ({
    label: `Latest event ${index + 1}${event.id !== undefined ? ` (${String(event.id)})` : ""}`,
    event,
  }));
}
