import { activitySettings, loadConfig } from '../../workers/config';
import { SettingsError } from '../../workers/temporal-settings';

describe('G9 worker settings', () => {
  test('defaults fill every setting from an empty environment', () => {
    const config = loadConfig({});
    expect(config.TEMPORAL_ADDRESS).toBe('127.0.0.1:7233');
    expect(config.KEELSON_IMAGE_PULL_GRACE_SECONDS).toBe(300);
    expect(config.KEELSON_LEGACY_PREFIXES).toEqual(['skyhook.nvidia.com/', 'nodewright.nvidia.com/']);
    expect(config.KEELSON_ADOPTION).toBe(true);
    expect(activitySettings(config).keyPrefix).toBeUndefined();
  });

  test('values from the environment are parsed', () => {
    const config = loadConfig({
      KEELSON_IMAGE_PULL_GRACE_SECONDS: '5',
      KEELSON_ADOPTION: 'false',
      KEELSON_KEY_PREFIX: 'nodewright.nvidia.com/',
    });
    expect(config.KEELSON_IMAGE_PULL_GRACE_SECONDS).toBe(5);
    expect(config.KEELSON_ADOPTION).toBe(false);
    expect(config.KEELSON_KEY_PREFIX).toBe('nodewright.nvidia.com/');
  });

  test('G9 a bad value stops start-up naming the setting, the value and the allowed range', () => {
    expect(() => loadConfig({ KEELSON_IMAGE_PULL_GRACE_SECONDS: '0' })).toThrow(SettingsError);
    expect(() => loadConfig({ KEELSON_IMAGE_PULL_GRACE_SECONDS: '0' })).toThrow(
      'KEELSON_IMAGE_PULL_GRACE_SECONDS="0": must be a whole number of seconds from 1 to 3600',
    );
    expect(() => loadConfig({ KEELSON_LOG_TAIL_BYTES: 'lots' })).toThrow('KEELSON_LOG_TAIL_BYTES="lots"');
    expect(() => loadConfig({ KEELSON_ADOPTION: 'maybe' })).toThrow('KEELSON_ADOPTION="maybe": must be true or false');
    expect(() => loadConfig({ KEELSON_DRAIN_POLICY: 'pray' })).toThrow('KEELSON_DRAIN_POLICY="pray"');
    expect(() => loadConfig({ KEELSON_WORKFLOW_BUNDLE: '/nonexistent/bundle.js' })).toThrow(
      'KEELSON_WORKFLOW_BUNDLE="/nonexistent/bundle.js": must be the path of an existing file (built by `npm run bundle`)',
    );
    expect(() => loadConfig({ KEELSON_KEY_PREFIX: 'no-slash' })).toThrow(
      'KEELSON_KEY_PREFIX="no-slash": must be a DNS subdomain followed by \'/\'',
    );
  });

  test('G9 every bad setting is reported at once', () => {
    let message = '';
    try {
      loadConfig({ KEELSON_BACKOFF_LIMIT: '99', KEELSON_CLUSTER: 'Not_A_Name' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('KEELSON_BACKOFF_LIMIT="99": must be a whole number from 0 to 20');
    expect(message).toContain('KEELSON_CLUSTER="Not_A_Name"');
  });

  test('G9 Temporal TLS, concurrency, shutdown and metrics settings are validated', () => {
    expect(() => loadConfig({ TEMPORAL_TLS_CERT: '/etc/temporal/tls.crt' })).toThrow(
      'TEMPORAL_TLS_KEY="": must be set together with TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY (mTLS)',
    );
    expect(() => loadConfig({ KEELSON_MAX_CONCURRENT_ACTIVITIES: '0' })).toThrow(
      'KEELSON_MAX_CONCURRENT_ACTIVITIES="0": must be a whole number from 1 to 10000',
    );
    expect(() => loadConfig({ KEELSON_SHUTDOWN_GRACE_SECONDS: '-1' })).toThrow(
      'KEELSON_SHUTDOWN_GRACE_SECONDS="-1": must be a whole number of seconds from 0 to 3600',
    );
    expect(() => loadConfig({ KEELSON_MAX_CACHED_WORKFLOWS: '20' })).toThrow(
      'KEELSON_MAX_CACHED_WORKFLOWS="20": must be at least KEELSON_MAX_CONCURRENT_WORKFLOW_TASKS (40)',
    );
    expect(
      loadConfig({ KEELSON_MAX_CACHED_WORKFLOWS: '20', KEELSON_MAX_CONCURRENT_WORKFLOW_TASKS: '10' }),
    ).toMatchObject({ KEELSON_MAX_CACHED_WORKFLOWS: 20 });
    expect(() => loadConfig({ KEELSON_METRICS_ADDRESS: '9464' })).toThrow(
      'KEELSON_METRICS_ADDRESS="9464": must be host:port',
    );
    expect(() => loadConfig({ KEELSON_SDK_METRICS_ADDRESS: '127.0.0.1:9464' })).toThrow(
      'KEELSON_SDK_METRICS_ADDRESS="127.0.0.1:9464": must differ from KEELSON_METRICS_ADDRESS',
    );
    const ok = loadConfig({
      TEMPORAL_API_KEY: 'k',
      KEELSON_METRICS_ADDRESS: '0.0.0.0:9464',
      KEELSON_SDK_METRICS_ADDRESS: 'off',
    });
    expect(ok.TEMPORAL_API_KEY).toBe('k');
    expect(ok.KEELSON_MAX_CONCURRENT_WORKFLOW_TASKS).toBe(40);
    expect(ok.KEELSON_SHUTDOWN_GRACE_SECONDS).toBe(25);
  });

  test('G9 worker versioning needs both its deployment and its build ID, each a valid name', () => {
    expect(() => loadConfig({ KEELSON_WORKER_DEPLOYMENT: 'keelson' })).toThrow(
      'KEELSON_WORKER_BUILD_ID="": must be set too: a versioned worker needs both its deployment name and its build ID',
    );
    expect(() => loadConfig({ KEELSON_WORKER_BUILD_ID: '1.2.0' })).toThrow(
      'KEELSON_WORKER_DEPLOYMENT="": must be set too',
    );
    expect(() => loadConfig({ KEELSON_WORKER_DEPLOYMENT: 'a.b', KEELSON_WORKER_BUILD_ID: '1' })).toThrow(
      `KEELSON_WORKER_DEPLOYMENT="a.b": must be 1-200 letters, digits, '_' or '-'`,
    );
    expect(() => loadConfig({ KEELSON_WORKER_PROMOTION: 'auto' })).toThrow(
      'KEELSON_WORKER_PROMOTION="auto": must be replay-checked or manual',
    );
    const config = loadConfig({ KEELSON_WORKER_DEPLOYMENT: 'keelson', KEELSON_WORKER_BUILD_ID: '1.2.0-r3' });
    expect([config.KEELSON_WORKER_BUILD_ID, config.KEELSON_WORKER_PROMOTION]).toEqual(['1.2.0-r3', 'replay-checked']);
  });
});
