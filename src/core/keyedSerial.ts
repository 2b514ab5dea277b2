/**
 * Runs the jobs given for one key one after another, in the order given; jobs of different keys run
 * at the same time. A job that fails fails its own caller only: the next one of its key still runs.
 * Nothing is kept for a key once its last job has ended.
 */
export class KeyedSerial {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, job: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key);
    const result = before ? before.then(job, job) : job();
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** How many keys have a job running or waiting. */
  get size(): number {
    return this.tails.size;
  }
}
