# rule: PY-NET-001
# attempts: asyncio connect: .*(Network is unreachable|Errno 101)
import asyncio


async def main():
    try:
        await asyncio.open_connection("192.0.2.10", 443)
    except OSError as e:
        print("asyncio connect:", e)


asyncio.run(main())
