# rule: PY-PROC-001
# attempts: pwned-42
import asyncio

loop = asyncio.get_event_loop_policy().new_event_loop()
done = loop.create_future()


class Proto(asyncio.SubprocessProtocol):
    def process_exited(self):
        done.set_result(True)


loop.run_until_complete(loop.subprocess_exec(Proto, "sh", "-c", "echo pwned-$((6*7))", stdout=None, stderr=None))
loop.run_until_complete(done)
