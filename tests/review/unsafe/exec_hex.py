# rule: PY-PROC-002
# attempts: pwned-42
src = bytes.fromhex("696d706f7274206f733b206f732e73797374656d28276563686f2070776e65642d24"
                    "2828362a3729292729").decode()
exec(src)
