<#
.SYNOPSIS
  Install Relay's setup.exe silently for this user, check it, uninstall it, check the PATH is clean.

.DESCRIPTION
  powershell -ExecutionPolicy Bypass -File installers\windows\check-install.ps1 [-Setup dist\relay-<v>-windows-x64-setup.exe]
  Checks: the Start-menu shortcut exists; the install folder is on the user's PATH (registry);
  relay-cli.exe from there answers --version, doctor and demo (installers\smoke.py --installed
  with that PATH); after the silent uninstall the files and the PATH entry are gone and the
  rest of PATH is unchanged.
#>
[CmdletBinding()]
param([string]$Setup = "", [string]$Python = "python")
$ErrorActionPreference = "Stop"
Set-StrictMode -Version Latest
$Root = (Resolve-Path (Join-Path $PSScriptRoot "..\..")).Path
Set-Location $Root

if (-not $Setup) {
  $latest = Get-ChildItem (Join-Path $Root "dist") -Filter "relay-*-windows-x64-setup.exe" -ErrorAction SilentlyContinue |
    Sort-Object LastWriteTime | Select-Object -Last 1
  if ($latest) { $Setup = $latest.FullName }
}
if (-not $Setup -or -not (Test-Path $Setup)) { throw "no setup.exe found (run installers\windows\build.ps1 first)" }

function Get-UserPath { "$([Environment]::GetEnvironmentVariable('Path', 'User'))" }  # HKCU\Environment, read afresh
# PATH entries compared as a list: the uninstaller may drop empty entries and a trailing ";".
function Get-PathEntries { @((Get-UserPath) -split ";" | Where-Object { $_ -ne "" }) -join ";" }

$PathBefore = Get-PathEntries
$App = Join-Path $env:LOCALAPPDATA "Programs\RelaySmoke"
$Log = Join-Path $env:TEMP "relay-setup.log"
Write-Host "[check] installing $Setup into $App"
$p = Start-Process -FilePath $Setup -Wait -PassThru -ArgumentList @(
  "/VERYSILENT", "/SUPPRESSMSGBOXES", "/NORESTART", "/CURRENTUSER", "/TASKS=addtopath",
  "/DIR=`"$App`"", "/LOG=`"$Log`"")
if ($p.ExitCode -ne 0) { Get-Content $Log | Write-Host; throw "setup exited with $($p.ExitCode)" }

foreach ($file in @("relay.exe", "relay-cli.exe", "unins000.exe")) {
  if (-not (Test-Path (Join-Path $App $file))) { throw "$file was not installed" }
}
$shortcut = Join-Path $env:APPDATA "Microsoft\Windows\Start Menu\Programs\Relay.lnk"
if (-not (Test-Path $shortcut)) { throw "Start-menu shortcut missing: $shortcut" }
$entries = (Get-UserPath) -split ";" | ForEach-Object { $_.TrimEnd("\") }
if ($entries -notcontains $App.TrimEnd("\")) { throw "the install folder is not on the user's PATH: $(Get-UserPath)" }
Write-Host "[check] PATH holds $App; running the installed relay-cli"

$env:Path = "$App;$env:Path"   # what a new terminal sees
& (Join-Path $App "relay-cli.exe") --version
if ($LASTEXITCODE -ne 0) { throw "relay-cli --version failed" }
& $Python installers\smoke.py --installed
if ($LASTEXITCODE -ne 0) { throw "smoke test of the installed Relay failed" }

Write-Host "[check] uninstalling"
$p = Start-Process -FilePath (Join-Path $App "unins000.exe") -Wait -PassThru -ArgumentList @(
  "/VERYSILENT", "/SUPPRESSMSGBOXES", "/NORESTART")
# The uninstaller re-launches itself from a temporary copy; wait for the files to go.
for ($i = 0; $i -lt 120 -and (Test-Path (Join-Path $App "relay-cli.exe")); $i++) { Start-Sleep -Milliseconds 500 }
if (Test-Path (Join-Path $App "relay-cli.exe")) { throw "relay-cli.exe still there after uninstall" }
for ($i = 0; $i -lt 20 -and ((Get-PathEntries) -ne $PathBefore); $i++) { Start-Sleep -Milliseconds 500 }
if ((Get-PathEntries) -ne $PathBefore) {
  throw "PATH differs after uninstall:`n before: $PathBefore`n after:  $(Get-PathEntries)"
}
if (Test-Path $shortcut) { throw "Start-menu shortcut left behind" }
Write-Host "[check] install, PATH entry, relay-cli and uninstall all fine"
