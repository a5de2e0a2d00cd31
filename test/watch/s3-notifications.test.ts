// Reading S3 event notifications in every form they are delivered in, and telling the pipeline's own
// output apart from new documents.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { isPipelineOutput } from '../../src/watch/pipeline-output.js';
import { decodeS3EventKey, isObjectCreated, readS3Notification, S3NotificationError } from '../../src/watch/s3-notifications.js';
import { eventRecord } from '../support/s3-notifications.js';

const put = (key: string, fields: { bucket?: string; eTag?: string; versionId?: string } = {}) => eventRecord('ObjectCreated:Put', { key, ...fields });
const keysOf = (text: string) => readS3Notification(text).created.map((object) => object.key);

describe('S3 event keys', () => {
  test("'+' is a space and percent escapes are decoded", () => {
    assert.equal(decodeS3EventKey('a%20b+c.pdf'), 'a b c.pdf');
  });

  test("a '+' in the name arrives as %2B", () => {
    assert.equal(decodeS3EventKey('report+1%2B2.pdf'), 'report 1+2.pdf');
  });

  test("MinIO's %2F is a '/'", () => {
    assert.equal(decodeS3EventKey('inbox%2Fscans%2Fpage.png'), 'inbox/scans/page.png');
  });

  test('UTF-8 names are decoded', () => {
    assert.equal(decodeS3EventKey('d%C3%A9p%C3%B4t.pdf'), 'dépôt.pdf');
  });
});

describe('which events create an object to read', () => {
  test('every ObjectCreated event, with or without the s3: prefix', () => {
    for (const name of ['ObjectCreated:Put', 'ObjectCreated:Post', 'ObjectCreated:Copy', 'ObjectCreated:CompleteMultipartUpload', 's3:ObjectCreated:Put']) {
      assert.equal(isObjectCreated(name), true, name);
    }
  });

  test('not removals, reads, or changes of tags and locks', () => {
    for (const name of ['ObjectRemoved:Delete', 's3:ObjectRemoved:DeleteMarkerCreated', 's3:ObjectAccessed:Get', 's3:ObjectCreated:PutTagging', 's3:ObjectCreated:PutRetention', 's3:ObjectCreated:PutLegalHold', 'ObjectRestore:Completed']) {
      assert.equal(isObjectCreated(name), false, name);
    }
  });
});

describe('reading notifications', () => {
  test('AWS {Records}: bucket, decoded key, eTag and versionId', () => {
    const notification = readS3Notification(JSON.stringify({ Records: [put('scans/a%20b+c.pdf', { bucket: 'in', eTag: 'e1', versionId: 'v1' })] }));
    assert.deepEqual(notification, {
      created: [{ bucket: 'in', key: 'scans/a b c.pdf', eTag: 'e1', versionId: 'v1', uploadId: JSON.stringify(['in', 'scans/a b c.pdf', 'version v1']) }],
      ignored: 0,
      malformed: [],
    });
  });

  test('events other than object creation are counted as ignored', () => {
    const records = [eventRecord('ObjectRemoved:Delete', { key: 'gone.pdf' }), eventRecord('s3:ObjectAccessed:Get', { key: 'read.pdf' }), put('new.pdf')];
    const notification = readS3Notification(JSON.stringify({ Records: records }));
    assert.deepEqual(notification.created.map((o) => o.key), ['new.pdf']);
    assert.equal(notification.ignored, 2);
  });

  test("MinIO's webhook body {EventName, Key, Records}", () => {
    const body = { EventName: 's3:ObjectCreated:Put', Key: 'inbox/scan one.pdf', Records: [eventRecord('s3:ObjectCreated:Put', { key: 'scan+one.pdf', bucket: 'inbox' })] };
    assert.deepEqual(keysOf(JSON.stringify(body)), ['scan one.pdf']);
  });

  test("MinIO's Redis access format: a list entry [{Event:[…], EventTime}]", () => {
    const entry = [{ Event: [eventRecord('s3:ObjectCreated:Put', { key: 'inbox%2Fa.pdf' })], EventTime: '2024-05-01T12:00:00.000Z' }];
    assert.deepEqual(keysOf(JSON.stringify(entry)), ['inbox/a.pdf']);
  });

  test('one access-format wrapper without the array around it', () => {
    assert.deepEqual(keysOf(JSON.stringify({ Event: [put('a.pdf')], EventTime: '2024-05-01T12:00:00.000Z' })), ['a.pdf']);
  });

  test('a plain array of records', () => {
    assert.deepEqual(keysOf(JSON.stringify([put('a.pdf', { eTag: '1' }), put('b.pdf', { eTag: '2' })])), ['a.pdf', 'b.pdf']);
  });

  test('SNS-wrapped: the S3 notification is the text of Message', () => {
    const sns = { Type: 'Notification', MessageId: 'm-1', TopicArn: 'arn:aws:sns:us-east-1:1:uploads', Message: JSON.stringify({ Records: [put('via+sns.pdf')] }) };
    assert.deepEqual(keysOf(JSON.stringify(sns)), ['via sns.pdf']);
  });

  test("S3's test event creates nothing, also through SNS", () => {
    const testEvent = { Service: 'Amazon S3', Event: 's3:TestEvent', Time: '2024-05-01T12:00:00.000Z', Bucket: 'inbox', RequestId: 'R', HostId: 'H' };
    assert.deepEqual(readS3Notification(JSON.stringify(testEvent)), { created: [], ignored: 1, malformed: [] });
    assert.deepEqual(readS3Notification(JSON.stringify({ Type: 'Notification', Message: JSON.stringify(testEvent) })), { created: [], ignored: 1, malformed: [] });
  });

  test('folder placeholders are ignored', () => {
    const notification = readS3Notification(JSON.stringify({ Records: [put('inbox/'), put('inbox/a.pdf')] }));
    assert.deepEqual(notification.created.map((o) => o.key), ['inbox/a.pdf']);
    assert.equal(notification.ignored, 1);
  });
});

describe('duplicates', () => {
  test('the same bucket, key and eTag twice is one object', () => {
    assert.deepEqual(keysOf(JSON.stringify({ Records: [put('a.pdf', { eTag: 'x' }), put('a.pdf', { eTag: 'x' })] })), ['a.pdf']);
  });

  test('the same key with another eTag is a new upload', () => {
    assert.deepEqual(keysOf(JSON.stringify({ Records: [put('a.pdf', { eTag: 'x' }), put('a.pdf', { eTag: 'y' })] })), ['a.pdf', 'a.pdf']);
  });

  test('the versionId names the upload when there is one', () => {
    const records = [put('a.pdf', { eTag: 'x', versionId: '1' }), put('a.pdf', { eTag: 'x', versionId: '2' }), put('a.pdf', { eTag: 'y', versionId: '1' })];
    assert.deepEqual(readS3Notification(JSON.stringify({ Records: records })).created.map((o) => o.versionId), ['1', '2']);
  });

  test('the same key in another bucket is another object', () => {
    assert.deepEqual(keysOf(JSON.stringify({ Records: [put('a.pdf', { bucket: 'one', eTag: 'x' }), put('a.pdf', { bucket: 'two', eTag: 'x' })] })), ['a.pdf', 'a.pdf']);
  });

  test('events with neither version nor eTag are all kept: nothing tells them apart from later uploads', () => {
    const notification = readS3Notification(JSON.stringify({ Records: [put('a.pdf'), put('a.pdf')] }));
    assert.equal(notification.created.length, 2);
    assert.equal(notification.created[0].uploadId, undefined);
  });
});

describe('malformed input', () => {
  test('text that is not JSON', () => {
    assert.throws(() => readS3Notification('{"Records": ['), S3NotificationError);
  });

  test('JSON of no known shape', () => {
    for (const text of ['{"hello":"world"}', '42', '"Records"', '[]', 'null']) {
      assert.throws(() => readS3Notification(text), S3NotificationError, text);
    }
  });

  test('an SNS message whose Message is not JSON', () => {
    assert.throws(() => readS3Notification(JSON.stringify({ Type: 'Notification', Message: 'not json' })), S3NotificationError);
  });

  test('a bad record is reported and the good ones still count', () => {
    const records = [{ eventName: 'ObjectCreated:Put', s3: { object: { key: 'no-bucket.pdf' } } }, put('bad%zzescape.pdf'), 'junk', put('good.pdf')];
    const notification = readS3Notification(JSON.stringify({ Records: records }));
    assert.deepEqual(notification.created.map((o) => o.key), ['good.pdf']);
    assert.equal(notification.malformed.length, 3);
    assert.match(notification.malformed[0], /without s3\.bucket\.name and s3\.object\.key/);
    assert.match(notification.malformed[1], /not URL-encoded: "bad%zzescape\.pdf"/);
    assert.match(notification.malformed[2], /without eventName/);
  });
});

describe("the pipeline's own output", () => {
  test('staging/, results/ and rejected/ of a storage at the bucket root', () => {
    for (const key of ['staging/0123/source.pdf', 'results/0123/document.md', 'results/0123/_DONE', 'rejected/ab.json']) {
      assert.equal(isPipelineOutput('s3://scriptorium', 'scriptorium', key), true, key);
    }
  });

  test('other keys of that bucket are documents', () => {
    for (const key of ['inbox/results/a.pdf', 'results.pdf', 'resultsX/a.pdf', 'stagingarea/a.pdf']) {
      assert.equal(isPipelineOutput('s3://scriptorium', 'scriptorium', key), false, key);
    }
  });

  test('under a storage prefix only that prefix counts', () => {
    assert.equal(isPipelineOutput('s3://scriptorium/ocr', 'scriptorium', 'ocr/results/0123/document.md'), true);
    assert.equal(isPipelineOutput('s3://scriptorium/ocr', 'scriptorium', 'results/0123/document.md'), false);
  });

  test('another bucket, or a file:// storage, writes nothing into the watched bucket', () => {
    assert.equal(isPipelineOutput('s3://scriptorium', 'inbox', 'results/0123/document.md'), false);
    assert.equal(isPipelineOutput('file:///srv/scriptorium', 'scriptorium', 'results/0123/document.md'), false);
  });
});
