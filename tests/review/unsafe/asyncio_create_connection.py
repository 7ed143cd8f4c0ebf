# rule: PY-NET-001
# attempts: Network is unreachable
import asyncio

loop = asyncio.new_event_loop()
loop.run_until_complete(loop.create_connection(asyncio.Protocol, "203.0.113.9", 80))
