// kafkajs 2 against a broker: produce, a consumer group with commits,
// ListGroups/DescribeGroups/offsets through the admin client, and topic
// admin. Usage: node kafkajs_client.js BOOTSTRAP TOPIC RECORDS
// Prints one JSON line of results; exits non-zero on the first failure.
'use strict';
const { Kafka, logLevel } = require('kafkajs');

const [bootstrap, topic, recordsArg] = process.argv.slice(2);
const records = parseInt(recordsArg || '2000', 10);
const group = `${topic}-group`;
const kafka = new Kafka({
  clientId: 'pinlog-kafkajs-test',
  brokers: [bootstrap],
  logLevel: logLevel.WARN,
  // Every step is bounded: a hang fails the test instead of stalling it.
  requestTimeout: 10000,
  retry: { retries: 5 },
});

function deadline(ms, what) {
  return new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out: ${what}`)), ms).unref());
}

async function main() {
  const out = {};
  const admin = kafka.admin();
  await admin.connect();
  const created = await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true });
  out.created = created;
  out.listed = (await admin.listTopics()).includes(topic);

  const producer = kafka.producer();
  await producer.connect();
  const batch = [];
  for (let i = 0; i < records; i++) batch.push({ key: `k${i % 7}`, value: `v${i}` });
  for (let i = 0; i < batch.length; i += 500) {
    await producer.send({ topic, messages: batch.slice(i, i + 500) });
  }
  await producer.disconnect();
  out.produced = records;

  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 10000, rebalanceTimeout: 10000 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen = new Set();
  let done;
  const all = new Promise((resolve) => { done = resolve; });
  await consumer.run({
    autoCommit: true,
    autoCommitInterval: 200,
    eachMessage: async ({ message }) => {
      seen.add(message.value.toString());
      if (seen.size >= records) done();
    },
  });
  await Promise.race([all, deadline(60000, 'consuming every record')]);
  // Commit what was consumed before leaving, so that the offsets below are
  // complete.
  await consumer.commitOffsets([]).catch(() => {});
  await consumer.stop();
  out.consumed = seen.size;

  // The group is known to the admin client while it is live (before
  // disconnect) and after it turned empty.
  const listedLive = await admin.listGroups();
  out.groupListedWhileLive = listedLive.groups.some((g) => g.groupId === group);
  await consumer.disconnect();
  const listed = await admin.listGroups();
  out.groupListed = listed.groups.some((g) => g.groupId === group);
  const described = await admin.describeGroups([group]);
  out.groupState = described.groups[0].state;
  const offsets = await admin.fetchOffsets({ groupId: group, topics: [topic] });
  out.committed = offsets[0].partitions.reduce((sum, p) => sum + Number(p.offset), 0);
  const ends = await admin.fetchTopicOffsets(topic);
  out.endOffsets = ends.reduce((sum, p) => sum + Number(p.high), 0);
  const meta = await admin.fetchTopicMetadata({ topics: [topic] });
  out.partitions = meta.topics[0].partitions.length;
  await admin.deleteGroups([group]);
  await admin.deleteTopics({ topics: [topic] });
  out.deleted = !(await admin.listTopics()).includes(topic);
  await admin.disconnect();
  console.log(JSON.stringify(out));
}

main().then(() => process.exit(0), (e) => {
  console.error(`kafkajs client failed: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
